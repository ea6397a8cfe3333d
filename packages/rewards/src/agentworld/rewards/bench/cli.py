"""``agentworld bench infer|judge|score|run``: registered by agentworld-rewards through the
``register_commands`` hook (world models are loaded through the sim backend plugins by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

console = Console()
bench = typer.Typer(name="bench", no_args_is_help=True, help=(
    "AgentWorldBench's protocol on a directory of {domain}_test.jsonl rows: infer, judge, score "
    "(or run for all three). Results in --out are append-only and resume where they stopped."))

DataDir = Annotated[Path, typer.Argument(help="Directory of *_test.jsonl AgentWorldBench files.")]
Out = Annotated[Path, typer.Option("--out", help="Results directory (predictions.jsonl, judged.jsonl, scores).")]
Domains = Annotated[list[str] | None, typer.Option("--domain", help="Only this domain; repeatable.")]
Limit = Annotated[int | None, typer.Option(min=1, help="At most this many rows per domain.")]
Concurrency = Annotated[int, typer.Option(min=1, help="Requests in flight at most.")]
Model = Annotated[str | None, typer.Option(
    help="World model: a checkpoint directory (hf backend), or the served model name with --base-url.")]
BaseUrl = Annotated[str | None, typer.Option(
    help="OpenAI-compatible endpoint of the world model (serve-openai, vLLM, SGLang); uses the openai backend.")]
Backend = Annotated[str | None, typer.Option(help="Sim backend plugin (default: openai with --base-url, else hf).")]
Prompt = Annotated[str, typer.Option(help="public: eval.py's request (history verbatim); native: as our trainers render it.")]
MaxNew = Annotated[int, typer.Option(min=1, help="Tokens generated per answer at most.")]
JudgeUrl = Annotated[str | None, typer.Option(help=(
    "OpenAI-compatible endpoint of the judge. Its key: AGENTWORLD_JUDGE_API_KEY when "
    "AGENTWORLD_JUDGE_BASE_URL is this URL, OPENAI_API_KEY when OPENAI_BASE_URL is; else none."))]
JudgeModel = Annotated[str | None, typer.Option(help="Judge model name (default: the endpoint's first).")]
JudgePrompts = Annotated[Path | None, typer.Option(
    help="Judge system prompts: DIR/<domain>/judge_system_prompt.txt (the public prompts/ layout) or DIR/<domain>.txt.")]
Retries = Annotated[int, typer.Option(min=0, help="Judge retries per row before it counts as failed.")]
JudgeTokens = Annotated[int, typer.Option(min=1, help="Judge answer tokens at most.")]
Name = Annotated[str, typer.Option(help="Model label in the results table.")]


def _fail(error: Exception) -> None:
    from rich.markup import escape

    console.print(f"[red]error:[/red] {escape(str(error))} (results so far are kept; rerun to resume)")
    raise typer.Exit(2)


def _rows(data: Path, domains: list[str] | None, limit: int | None) -> list:
    from agentworld.rewards.bench.data import load_rows

    rows, report = load_rows(data, domains=domains, limit=limit)
    console.print(f"{data}: {report.summary()}; {len(rows)} rows to evaluate")
    return rows


def _infer(rows: list, out: Path, model: str | None, base_url: str | None, backend: str | None,
           prompt: str, max_new_tokens: int, concurrency: int) -> None:
    from agentworld.core import plugins
    from agentworld.core.world_models import ClosableWorldModel
    from agentworld.rewards.bench.runs import check_run_config, infer

    if model is None:
        raise typer.BadParameter("which world model: a checkpoint directory, or a served model "
                                 "name with --base-url", param_hint="--model")
    if prompt not in ("public", "native"):
        raise typer.BadParameter(f"{prompt!r}; valid: public, native", param_hint="--prompt")
    backend = backend or ("openai" if base_url else "hf")
    options: dict[str, Any] = {"max_new_tokens": max_new_tokens}
    if base_url:
        options |= {"base_url": base_url, "max_concurrency": concurrency}
    else:
        options["batch_size"] = concurrency
    check_run_config(out, {"model": model, "backend": backend, "prompt": prompt},
                     results="predictions.jsonl")
    world_model = plugins.get_sim_backend(backend).load(model, **options)
    try:
        stats = infer(rows, world_model, out, mode=prompt, concurrency=concurrency,  # type: ignore[arg-type]
                      console=console)
    except RuntimeError as error:  # an endpoint that went away: what was done is kept
        _fail(error)
    finally:
        if isinstance(world_model, ClosableWorldModel):
            world_model.close()
    console.print(stats.line())


def _judge(rows: list, out: Path, url: str, model: str | None, prompts_dir: Path | None,
           retries: int, max_tokens: int, concurrency: int) -> None:
    from agentworld.core.endpoints import resolve_endpoint
    from agentworld.rewards.bench.prompts import load_prompts
    from agentworld.rewards.bench.runs import Judge, check_run_config, judge
    from agentworld.rewards.judge import ENV_PAIRS

    prompts = load_prompts(sorted({r.domain for r in rows}), prompts_dir)
    # the key configured with this URL only (AGENTWORLD_JUDGE_*, else OPENAI_*): none otherwise
    url, key = resolve_endpoint("agentworld bench judge", url, None, ENV_PAIRS)
    try:
        judge_fn = Judge(url, model, prompts, api_key=key, retries=retries, max_tokens=max_tokens)
    except RuntimeError as error:  # unreachable endpoint or unserved model: say so, no traceback
        _fail(error)
    check_run_config(out, {"judge_model": judge_fn.model,
                           "judge_prompts": str(prompts_dir) if prompts_dir else "ours"},
                     results="judged.jsonl")
    try:
        stats = judge(rows, judge_fn, out, concurrency=concurrency, console=console)
    finally:
        judge_fn.client.close()
    console.print(stats.line())


def _score(rows: list, out: Path, name: str) -> None:
    from agentworld.rewards.bench.scoring import score

    result = score(rows, out, name)
    console.print(result["markdown"], markup=False)
    judge = result["judge"]
    console.print(f"judged: {judge['valid']} valid, {judge['failed']} failed (excluded), "
                  f"{judge['pending']} not judged; files: {out}/scores.json, results.md, drift.png",
                  markup=False)


@bench.command("infer")
def infer_cmd(data: DataDir, out: Out, model: Model = None, base_url: BaseUrl = None,
              backend: Backend = None, prompt: Prompt = "public", max_new_tokens: MaxNew = 1024,
              concurrency: Concurrency = 8, domain: Domains = None, limit: Limit = None) -> None:
    """World-model answers for every row, with the full history of its trajectory."""
    _infer(_rows(data, domain, limit), out, model, base_url, backend, prompt, max_new_tokens, concurrency)


@bench.command("judge")
def judge_cmd(data: DataDir, out: Out, judge_base_url: JudgeUrl = None, judge_model: JudgeModel = None,
              judge_prompts: JudgePrompts = None, retries: Retries = 2, judge_max_tokens: JudgeTokens = 2048,
              concurrency: Concurrency = 8, domain: Domains = None, limit: Limit = None) -> None:
    """Five-dimension judge scores for every predicted row."""
    if judge_base_url is None:
        raise typer.BadParameter("the judge's OpenAI-compatible endpoint is required",
                                 param_hint="--judge-base-url")
    _judge(_rows(data, domain, limit), out, judge_base_url, judge_model, judge_prompts, retries,
           judge_max_tokens, concurrency)


@bench.command("score")
def score_cmd(data: DataDir, out: Out, name: Name = "model", domain: Domains = None,
              limit: Limit = None) -> None:
    """Tables (judge macro and micro, per dimension, rule metrics), scores.json, drift.png."""
    _score(_rows(data, domain, limit), out, name)


@bench.command("run")
def run_cmd(data: DataDir, out: Out, model: Model = None, base_url: BaseUrl = None,
            backend: Backend = None, prompt: Prompt = "public", max_new_tokens: MaxNew = 1024,
            judge_base_url: JudgeUrl = None, judge_model: JudgeModel = None,
            judge_prompts: JudgePrompts = None, retries: Retries = 2,
            judge_max_tokens: JudgeTokens = 2048, concurrency: Concurrency = 8,
            domain: Domains = None, limit: Limit = None, name: Name = "model") -> None:
    """infer, then judge (when --judge-base-url is given), then score; resumes a killed run."""
    rows = _rows(data, domain, limit)
    _infer(rows, out, model, base_url, backend, prompt, max_new_tokens, concurrency)
    if judge_base_url:
        _judge(rows, out, judge_base_url, judge_model, judge_prompts, retries, judge_max_tokens,
               concurrency)
    else:
        console.print("no --judge-base-url: rule metrics only")
    _score(rows, out, name)


def register(cli: Any) -> None:
    """Add ``bench`` to the root CLI."""
    cli.add_typer(bench, name="bench")
