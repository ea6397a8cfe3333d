"""The ``agentworld`` command line (typer + rich).

Sub-commands find domains, trainers, backends and rewards by plugin name;
plugins may add their own sub-commands through the ``register_commands`` hook.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agentworld.core import plugins
from agentworld.core.protocols import ConfigurableTrainer, ExperienceTrainer, OfflineDomain

app = typer.Typer(
    name="agentworld",
    help="Train language world models of agent environments and serve them as RL simulators.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()

RunDir = Annotated[str, typer.Option("--run-dir", help="Run directory (local path or fsspec URL).")]
Seed = Annotated[int, typer.Option(help="Random seed.")]
AllowHub = Annotated[bool, typer.Option(
    "--allow-hub/--no-allow-hub", help="MODEL may be a Hugging Face Hub id 'org/name' (downloads); as allow_hub in training.")]


def _parse_sets(values: list[str] | None) -> dict[str, Any]:
    """``["lr=1e-3", "lora=true"]`` -> ``{"lr": 0.001, "lora": True}`` (TOML value syntax)."""
    import tomllib

    out: dict[str, Any] = {}
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--set")
        try:
            out[key] = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            out[key] = raw
    return out


@app.command("plugins")
def plugins_cmd() -> None:
    """List installed plugins and the hooks each implements."""
    table = Table(title="agentworld plugins")
    for column in ("name", "package", "version", "hooks"):
        table.add_column(column)
    for row in plugins.plugin_table():
        table.add_row(row["name"], row["package"], row["version"], ", ".join(row["hooks"]))
    console.print(table)
    for kind in plugins.KINDS:
        listed = ", ".join(plugins.names(kind)) or "-"
        console.print(f"{kind.replace('_', ' ')}: {listed}")


@app.command("domains")
def domains_cmd() -> None:
    """List installed domains: whether a real environment runs here (else data-only: trained
    and measured from recorded trajectories), and their environment facts."""
    table = Table(title="agentworld domains")
    for column in ("domain", "real environment here", "version", "plugin", "facts"):
        table.add_column(column, overflow="fold")
    for name in plugins.names("domain"):
        domain = plugins.get_domain(name)
        offline = isinstance(domain, OfflineDomain) and not domain.has_environment
        real = "no (data-only)" if offline else "yes"
        try:
            facts = "; ".join(f"{k}: {v}" for k, v in domain.describe().items())
        except Exception as e:  # a domain that cannot run here still lists
            facts = f"unavailable: {e}"
        table.add_row(name, real, domain.version, plugins.owner("domain", name), Text(facts))
    console.print(table)


def _policy_mix(values: list[str] | None, domain: str) -> dict[str, float]:
    """``--policy`` values as ``{name: weight}``; without any, weight 1 for each policy of ``domain``.

    Raises:
        typer.BadParameter: a value is not ``NAME=WEIGHT`` with a number ``WEIGHT >= 0``.
        UnknownPluginError: no values and ``domain`` is not installed.
    """
    if not values:
        return dict.fromkeys(plugins.get_domain(domain).policies(), 1.0)
    mix: dict[str, float] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        try:
            weight = float(raw)
        except ValueError:
            weight = -1.0
        if not (name and sep) or not weight >= 0:
            raise typer.BadParameter(f"expected NAME=WEIGHT with a number WEIGHT >= 0, got {item!r}",
                                     param_hint="--policy")
        mix[name] = weight
    return mix


@app.command("collect")
def collect_cmd(
    out: Annotated[str, typer.Option(help="Output JSONL URL for all episodes, e.g. runs/x/episodes.jsonl.")],
    domain: Annotated[str, typer.Option(help="Domain plugin name.")] = "terminal",
    episodes: Annotated[int, typer.Option(min=1, help="Number of episodes.")] = 100,
    policy: Annotated[list[str] | None, typer.Option(
        help="Policy weight as NAME=WEIGHT; repeatable. Default: each of the domain's policies, weight 1.")] = None,
    max_steps: Annotated[int, typer.Option(min=1, help="Steps per episode at most.")] = 12,
    workers: Annotated[int, typer.Option(min=1, help="Environments run in parallel.")] = 2,
    seed: Seed = 0,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing OUT.")] = False,
) -> None:
    """Collect real episodes from a domain's real environment into JSONL.

    Each finished episode is also appended to OUT.part (local OUT): after a crash or kill,
    the same command resumes from there; OUT is written at the end, atomically."""
    from agentworld.core.io import check_output, write_episodes
    from agentworld.core.pipeline import collect_with_progress, part_path

    mix = _policy_mix(policy, domain)
    check_output(out, overwrite=overwrite)
    part = part_path(out)
    resumed = _has_part(part)
    if resumed:
        console.print(f"resuming: {part} holds finished episodes of an interrupted run")
    result = collect_with_progress(domain, episodes, console, policies=mix, seed=seed,
                                   max_steps=max_steps, workers=workers, part=part)
    write_episodes(out, result)
    if part is not None:
        Path(part).unlink(missing_ok=True)
    console.print(f"wrote {len(result)} episodes ({sum(len(e.steps) for e in result)} transitions) -> {out}")


def _has_part(part: str | None) -> bool:
    """True when the part file ``part`` exists with more than its header line."""
    return part is not None and Path(part).is_file() and Path(part).read_bytes().count(b"\n") > 1


@app.command("train")
def train_cmd(
    stage: Annotated[str, typer.Argument(help="Training stage (trainer plugin name): cpt, sft, rl, agent, ...")],
    output_dir: Annotated[str | None, typer.Option(
        help="Where the checkpoint (or agent) is written.")] = None,
    data: Annotated[str | None, typer.Option(
        help="Training data URL (.jsonl, .jsonl.gz, .parquet): episodes, AgentWorldBench rows of any domain, or chat messages rows; needed by world-model stages, optional for agent.")] = None,
    model: Annotated[str | None, typer.Option(
        help="Model preset name or checkpoint directory (world-model stages; agent with policy=lm).")] = None,
    env: Annotated[str | None, typer.Option(
        help="agent: where experience comes from, real:DOMAIN or sim:CHECKPOINT.")] = None,
    mix: Annotated[float | None, typer.Option(
        help="agent: fraction of real episodes in [0, 1] (Dyna-style real/simulated mix).")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Trainer option KEY=VALUE; repeatable.")] = None,
    reasoning: Annotated[bool, typer.Option(
        help="sft: targets <think>rationale</think> before the observation, from the domain's explain "
        "(same as --set reasoning=domain; --set reasoning=teacher uses an endpoint).")] = False,
    seed: Seed = 0,
    show_options: Annotated[bool, typer.Option(
        "--options", help="List the stage's --set options (key, default, meaning) and exit.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress bar (there is one by default when output is a terminal).")] = False,
) -> None:
    """Train one stage: a world model (cpt, sft, rl on collected episodes) or an agent (agent --env)."""
    if show_options:
        _print_options(stage)
        return
    if output_dir is None:
        raise typer.BadParameter("where to write the result is required", param_hint="--output-dir")
    options: dict[str, Any] = {"output_dir": output_dir, "seed": seed}
    for key, value in (("model", model), ("env", env), ("mix", mix)):
        if value is not None:
            options[key] = value
    if reasoning:
        options["reasoning"] = "domain"
    if quiet:
        options["progress"] = False
    options |= _parse_sets(set_)
    if mix is not None and not 0.0 <= mix <= 1.0:
        raise typer.BadParameter(f"the fraction of real episodes must be in [0, 1], got {mix}",
                                 param_hint="--mix")
    trainer = plugins.get_trainer(stage)
    # A trainer that gathers its own experience (agent) says so with needs_data/needs_model.
    gathers = isinstance(trainer, ExperienceTrainer)
    needs_data, needs_model = (trainer.needs_data, trainer.needs_model) if gathers else (True, True)
    if data is None and needs_data:
        raise typer.BadParameter(f"stage {stage!r} trains on episodes; pass --data URL",
                                 param_hint="--data")
    if "model" not in options and needs_model:
        raise typer.BadParameter(f"stage {stage!r} needs --model (a preset name or checkpoint)",
                                 param_hint="--model")
    path = trainer.train(_training_episodes(data) if data is not None else [], options)
    console.print(f"{stage} output -> {path}")


def _training_episodes(url: str) -> list:
    """Episodes of ``--data``: episodes, AgentWorldBench rows (one episode per trajectory) or chat
    ``messages`` rows, in JSONL, ``.jsonl.gz`` or Parquet (:mod:`agentworld.core.dataformats`)."""
    from agentworld.core.dataformats import read_any_episodes

    episodes, note = read_any_episodes(url)  # ValueError (bad name or rows): main() prints it
    if note:
        console.print(f"{url}: {note}")
    return episodes


def _print_options(stage: str) -> None:
    """The table of ``agentworld train STAGE --options``."""
    trainer = plugins.get_trainer(stage)
    if not isinstance(trainer, ConfigurableTrainer):
        console.print(f"trainer {stage!r} does not describe its options")
        return
    title = f"{stage} options: --set KEY=VALUE (in a pipeline file, keys of the stage's table)"
    table = Table("option", "default", "meaning", title=title)
    for key, default, text in trainer.options():
        table.add_row(key, Text(default), Text(text))
    console.print(table)


def _domain_for(model: str, explicit: str | None) -> str:
    """The domain ``eval``/``simulate`` use: ``--domain`` when given, else the one the checkpoint's
    card records (``agentworld.json``), else ``terminal``.

    Raises:
        UnknownPluginError: ``explicit`` is not an installed domain (the message lists them).
    """
    if explicit is not None:
        plugins.get_domain(explicit)
        return explicit
    from agentworld.core.card import read_card

    return read_card(model).get("domain") or "terminal"


@app.command("eval")
def eval_cmd(
    data: Annotated[str, typer.Option(
        help="Held-out data URL (.jsonl, .jsonl.gz, .parquet): episodes, AgentWorldBench or chat messages rows.")],
    model: Annotated[str, typer.Option(help="World-model checkpoint directory.")],
    out: Annotated[str, typer.Option(help="Directory for metrics.json, report.md, fidelity.png.")],
    domain: Annotated[str | None, typer.Option(
        help="Domain plugin name (its scorer and action types); default: the checkpoint's, else terminal.")] = None,
    backend: Annotated[str, typer.Option(help="Sim backend plugin name.")] = "hf",
    max_transitions: Annotated[int, typer.Option(min=1, help="Transitions evaluated at most.")] = 400,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Tokens generated per prediction at most.")] = 256,
    num_beams: Annotated[int, typer.Option(min=1, help="Beam search with this many beams (hf backend); 1: greedy.")] = 1,
    judge_base_url: Annotated[str | None, typer.Option(
        help="Add the llm_judge metric (AgentWorldBench's five dimensions) from this "
        "OpenAI-compatible endpoint.")] = None,
    judge_model: Annotated[str | None, typer.Option(
        help="Judge model name (default: the endpoint's first).")] = None,
    judge_fallback: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Score in [0, 1] for a judge answer without scores (default: stop with an error).")] = None,
    ood_data: Annotated[str | None, typer.Option(
        help="Out-of-distribution episodes (JSONL URL), scored beside --data; default: ood.jsonl "
             "next to --data when it exists (the collect stage writes it there).")] = None,
    ood_max_transitions: Annotated[int, typer.Option(
        min=0, help="Out-of-distribution transitions evaluated at most.")] = 200,
    allow_hub: AllowHub = True,
) -> None:
    """Measure next-observation fidelity of a world model against the baselines: in distribution,
    out of distribution and on in-episode consistency."""
    from agentworld.core.config import EvalConfig
    from agentworld.core.pipeline import RunState, run_eval

    state = RunState(dir=out.rstrip("/"), seed=0, domain=_domain_for(model, domain), checkpoint=model,
                     heldout_url=data, ood_url=ood_data or "")
    cfg = EvalConfig(backend=backend, model=model, max_transitions=max_transitions,
                     max_new_tokens=max_new_tokens, num_beams=num_beams,
                     ood_max_transitions=ood_max_transitions, allow_hub=allow_hub)
    if judge_base_url:
        cfg.rewards.append("llm_judge")
        options = {"base_url": judge_base_url, "model": judge_model, "fallback": judge_fallback}
        cfg.reward_options["llm_judge"] = {k: v for k, v in options.items() if v is not None}
    paths = run_eval(cfg, state, console)
    console.print("report: " + ", ".join(paths.values()))


@app.command("simulate")
def simulate_cmd(
    model: Annotated[str, typer.Option(help="World-model checkpoint directory.")],
    domain: Annotated[str | None, typer.Option(
        help="Domain plugin name (system prompt, tasks); default: the checkpoint's, else terminal.")] = None,
    backend: Annotated[str, typer.Option(help="Sim backend plugin name.")] = "hf",
    task_seed: Annotated[int, typer.Option(help="Seed of the domain task to simulate.")] = 0,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Tokens generated per step at most.")] = 256,
    num_beams: Annotated[int, typer.Option(min=1, help="Beam search with this many beams (hf backend); 1: greedy.")] = 1,
    allow_hub: AllowHub = True,
) -> None:
    """Interactive simulated environment: type an action, see the predicted observation (Ctrl-D quits)."""
    env_domain = plugins.get_domain(_domain_for(model, domain))
    task = env_domain.tasks().sample(1, seed=task_seed)[0]
    sim = plugins.get_sim_backend(backend)
    from agentworld.core.pipeline import decoding_options

    world_model = sim.load(model, max_new_tokens=max_new_tokens, **decoding_options(num_beams, allow_hub))
    env = sim.make_env(world_model, domain=env_domain)
    real = env_domain.make_env()
    try:
        initial, _ = real.reset(seed=task_seed, options={"task": task})
    finally:
        real.close()
    obs, _ = env.reset(options={"task": task, "system_prompt": env_domain.system_prompt(task),
                                "initial_observation": initial.text})
    console.print(f"[bold]task:[/bold] {escape(task.instruction)}\n(simulated; Ctrl-D to quit)")
    sys.stdout.write(obs)
    sys.stdout.flush()
    for line in sys.stdin:
        obs, _, terminated, truncated, info = env.step(line.rstrip("\n"))
        shown = obs if info.get("parsed", True) else f"[unparsed answer] {info.get('raw', '')}\n"
        # A terminal observation ends in its prompt; any other ends its line here.
        sys.stdout.write(shown if shown.endswith((" ", "\n")) else shown + "\n")
        sys.stdout.flush()
        if terminated or truncated:
            console.print("\n[episode ended]", markup=False)
            break


@app.command("convert")
def convert_cmd(
    source: Annotated[str, typer.Argument(help="Input URL: .jsonl, .jsonl.gz (.bz2/.xz/.zst) or .parquet.")],
    target: Annotated[str, typer.Argument(
        help="Output URL; its extension picks the container: .jsonl, .jsonl.gz (.bz2/.xz/.zst) or .parquet.")],
    to: Annotated[str | None, typer.Option(
        help="What the rows hold: 'episodes', 'agentworldbench' (one row per evaluated turn) or "
        "'messages' (one chat row per SFT pair, for TRL's SFTTrainer and LLaMA-Factory). "
        "Default: 'agentworldbench' from episodes, else 'episodes'.")] = None,
    layout: Annotated[str, typer.Option(
        help="agentworldbench: rows hold every turn ('full', as the public files) or the turns "
        "up to turn_idx ('prefix').")] = "full",
    reasoning: Annotated[bool, typer.Option(
        help="messages: put the domain's rationale in <think> before each observation block "
        "(as train sft --reasoning does).")] = False,
) -> None:
    """Convert between episodes, AgentWorldBench rows and chat messages, in JSONL or Parquet."""
    from agentworld.core import dataformats as df
    from agentworld.core.io import same_file

    if same_file(source, target):
        raise typer.BadParameter(f"{target} is SOURCE itself; writing it would replace the data "
                                 "being read: choose another TARGET", param_hint="TARGET")

    for url, hint in ((source, "SOURCE"), (target, "TARGET")):
        try:
            df.container_of(url)
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint=hint) from None
    found = df.sniff(source)
    if found is None:
        raise typer.BadParameter(f"{source}'s first row is neither an episode nor an "
                                 "AgentWorldBench record nor a chat 'messages' row; pass an "
                                 "episodes, AgentWorldBench or messages file", param_hint="SOURCE")
    to = to or ("agentworldbench" if found == "episodes" else "episodes")
    if to not in df.KINDS:
        raise typer.BadParameter(f"{to!r}; valid: {', '.join(df.KINDS)}", param_hint="--to")
    if layout not in ("full", "prefix"):
        raise typer.BadParameter(f"{layout!r}; valid: full, prefix", param_hint="--layout")
    same_file_type = source.rsplit(".", 1)[-1] == target.rsplit(".", 1)[-1]
    if found == to and same_file_type:
        other = "episodes" if to != "episodes" else "agentworldbench"
        raise typer.BadParameter(f"{source} is {to} JSONL already: pass --to {other} (or no "
                                 "--to) to convert it, or a TARGET of another file type "
                                 "(.parquet, .jsonl.gz)", param_hint="--to")
    if found == to:  # the same rows in another container
        n = df.write_rows(target, (row for _, row in df.read_rows(source)))
        console.print(f"wrote {n} {to} rows -> {target}")
        return
    episodes, note = df.read_any_episodes(source)
    if note:
        console.print(f"read {note}")
    rationales = None
    if reasoning and to == "messages":
        from agentworld.core.rationales import domain_rationales

        rationales = domain_rationales(episodes)
    n = df.write_as(target, episodes, to, layout=layout, rationales=rationales)  # type: ignore[arg-type]
    what = {"agentworldbench": "AgentWorldBench records", "episodes": "episodes",
            "messages": "chat messages rows (one per SFT pair)"}[to]
    console.print(f"wrote {n} {what} -> {target}")


@app.command("run")
def run_cmd(
    pipeline: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Pipeline TOML file.")],
    run_dir: Annotated[str | None, typer.Option("--run-dir", help="Override \\[run].dir.")] = None,
) -> None:
    """Run the stages composed in a pipeline file (collect, cpt, sft, rl, eval, simulate)."""
    from agentworld.core.config import load_config
    from agentworld.core.pipeline import run_pipeline

    config = load_config(pipeline)
    if not config.stages():
        raise typer.BadParameter(f"{pipeline} has no stage table: add one or more of [collect], [cpt], "
                                 "[sft], [rl], [eval], [simulate]", param_hint="PIPELINE")
    if run_dir:
        config.run.dir = run_dir
    _finish(run_pipeline(config, console))


@app.command("quickstart")
def quickstart_cmd(
    run_dir: RunDir = "runs/quickstart",
    episodes: Annotated[int | None, typer.Option(min=10, help="Override the number of collected episodes.")] = None,
    time_scale: Annotated[float, typer.Option(min=0.01, help="Multiply the training time budgets.")] = 1.0,
) -> None:
    """The main job on its embedded default: collect -> cpt -> sft -> eval -> simulate (terminal)."""
    from agentworld.core.config import quickstart_config
    from agentworld.core.pipeline import run_pipeline

    config = quickstart_config()
    config.run.dir = run_dir
    if episodes and config.collect:
        config.collect.episodes = episodes
    for stage in (config.cpt, config.sft):
        if stage is not None and getattr(stage, "time_budget_s", None):
            stage.time_budget_s = stage.time_budget_s * time_scale
    _finish(run_pipeline(config, console))


def _finish(state: Any) -> None:
    import fsspec

    console.rule("done")
    console.print(f"run directory: {state.dir}")
    fs, root = fsspec.core.url_to_fs(state.dir)
    for name in ("report.md", "metrics.json", "fidelity.png", "replay.md", "episodes/train.jsonl"):
        if fs.exists(f"{root}/{name}"):
            console.print(f"  {state.dir}/{name}")
    if state.checkpoint:
        console.print(f"  checkpoint: {state.checkpoint}")
    console.print(f"stage timings (s): {state.timings_s}")


def main() -> None:
    """Console-script entry point: loads plugins, lets them add commands, runs the app."""
    plugins.load_plugins().hook.register_commands(cli=app)
    try:
        app()
    except (plugins.UnknownPluginError, ValueError, OSError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        sys.exit(2)
