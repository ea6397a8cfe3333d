"""``agentworld eval`` (fidelity report) and ``agentworld simulate`` (interactive simulated
environment) of a world-model checkpoint."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from agentworld.app.checks import check_input_file, check_model, check_output_dir
from agentworld.app.commands.root import AllowHub, app, console
from agentworld.core import plugins
from agentworld.core.rollout import start_episode, step_episode, text_of
from agentworld.core.types import Action


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
    model: Annotated[str, typer.Option(
        "--model", "--checkpoint", help="World-model checkpoint directory (or hub id; --checkpoint: "
        "the old name).")],
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
    eval_set: Annotated[list[str] | None, typer.Option(
        help="Evaluation set scored as its own split from NAME.jsonl next to --data (the collect "
             "stage's [collect] eval_sets, e.g. handwritten); repeatable. realistic.jsonl next "
             "to --data is scored when it exists.")] = None,
    realistic_max_transitions: Annotated[int, typer.Option(
        min=0, help="Transitions of the realistic split and of each evaluation set at most.")] = 150,
    train_data: Annotated[str | None, typer.Option(
        help="The model's training episodes (any dataset format): the retrieval-only baseline "
             "`nearest` answers the most similar real transition among them; without it that "
             "baseline is left out, and the report says so.")] = None,
    allow_hub: AllowHub = True,
) -> None:
    """Measure next-observation fidelity of a world model against the baselines: in distribution,
    out of distribution, on realistic sessions and on in-episode consistency."""
    check_input_file(data, "--data")
    if train_data is not None:
        check_input_file(train_data, "--train-data")
    if ood_data is not None:
        check_input_file(ood_data, "--ood-data")
    if backend != "openai":  # an endpoint's model is a name the server knows
        check_model(model, "--model", allow_hub=allow_hub)
    check_output_dir(out, "--out")
    from agentworld.app.config import EvalConfig
    from agentworld.app.pipeline import RunState, run_eval

    state = RunState(dir=out.rstrip("/"), seed=0, domain=_domain_for(model, domain), checkpoint=model,
                     heldout_url=data, ood_url=ood_data or "")
    state.train_url = train_data or ""  # not the run directory's: only what --train-data names
    cfg = EvalConfig(backend=backend, model=model, max_transitions=max_transitions,
                     max_new_tokens=max_new_tokens, num_beams=num_beams,
                     ood_max_transitions=ood_max_transitions, allow_hub=allow_hub,
                     realistic_max_transitions=realistic_max_transitions, eval_sets=eval_set or [])
    if judge_base_url:
        cfg.rewards.append("llm_judge")
        options = {"base_url": judge_base_url, "model": judge_model, "fallback": judge_fallback}
        cfg.reward_options["llm_judge"] = {k: v for k, v in options.items() if v is not None}
    paths = run_eval(cfg, state, console)
    console.print("report: " + ", ".join(paths.values()))


def _show(text: str) -> None:
    """Write one observation or action; a terminal observation ends in its prompt (kept on
    the line for the next action), any other text ends its line here."""
    sys.stdout.write(text if text.endswith((" ", "\n")) else text + "\n")
    sys.stdout.flush()


@app.command("simulate")
def simulate_cmd(
    model: Annotated[str, typer.Option(
        "--model", "--checkpoint", help="World-model checkpoint directory (or hub id; --checkpoint: "
        "the old name).")],
    domain: Annotated[str | None, typer.Option(
        help="Domain plugin name (system prompt, tasks); default: the checkpoint's, else terminal.")] = None,
    backend: Annotated[str, typer.Option(help="Sim backend plugin name.")] = "hf",
    task_seed: Annotated[int, typer.Option(help="Seed of the domain task to simulate.")] = 0,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Tokens generated per step at most.")] = 256,
    num_beams: Annotated[int, typer.Option(min=1, help="Beam search with this many beams (hf backend); 1: greedy.")] = 1,
    allow_hub: AllowHub = True,
) -> None:
    """Interactive simulated environment: type an action, see the predicted observation (Ctrl-D quits)."""
    if backend != "openai":
        check_model(model, "--model", allow_hub=allow_hub)
    env_domain = plugins.get_domain(_domain_for(model, domain))
    task = env_domain.tasks().sample(1, seed=task_seed)[0]
    sim = plugins.get_sim_backend(backend)
    from agentworld.app.pipeline import decoding_options

    world_model = sim.load(model, max_new_tokens=max_new_tokens, **decoding_options(num_beams, allow_hub))
    env = sim.make_env(world_model, domain=env_domain)
    real = env_domain.make_env()
    try:
        initial = start_episode(real, task=task, seed=task_seed).initial_observation
    finally:
        real.close()
    episode = start_episode(env, options={"task": task, "system_prompt": env_domain.system_prompt(task),
                                          "initial_observation": text_of(initial)})
    console.print(f"[bold]task:[/bold] {escape(task.instruction)}\n(simulated; Ctrl-D to quit)")
    echo = not sys.stdin.isatty()  # piped actions are not shown by a terminal: show them here
    _show(episode.initial_observation)
    for line in sys.stdin:
        if echo:
            _show(line.rstrip("\n") + "\n")
        t = step_episode(env, episode, Action(text=line.rstrip("\n")))
        shown = t.observation if t.info.get("parsed", True) else f"[unparsed answer] {t.info.get('raw', '')}\n"
        _show(shown)
        if episode.done:
            console.print("\n[episode ended]", markup=False)
            break
