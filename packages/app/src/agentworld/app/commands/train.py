"""``agentworld train STAGE``: one training stage, found by trainer plugin name."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from agentworld.app.checks import check_input_file, check_model, check_output_dir
from agentworld.app.commands.root import Seed, app, console, parse_sets
from agentworld.app.progress_lines import ProgressLines
from agentworld.core import plugins
from agentworld.core.protocols import ConfigurableTrainer, ExperienceTrainer


#: The built-in world-model stages: they take --data, never --env or --mix (the agent's).
WORLD_MODEL_STAGES = frozenset({"cpt", "sft", "rl"})


@app.command("train")
def train_cmd(
    stage: Annotated[str, typer.Argument(help="Training stage (trainer plugin name): cpt, sft, rl, agent, ...")],
    out: Annotated[str | None, typer.Option(
        "--out", "--output-dir", help="Where the checkpoint (or agent) is written (--output-dir: "
        "the old name).")] = None,
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
    overwrite: Annotated[bool, typer.Option(
        help="Replace a checkpoint already in --out (as collect --overwrite replaces OUT); "
        "--set resume=true continues it instead.")] = False,
    show_options: Annotated[bool, typer.Option(
        "--options", help="List the stage's --set options (key, default, meaning) and exit.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress bar (there is one by default when output is a terminal) "
        "and no progress lines (printed otherwise).")] = False,
    progress_every: Annotated[float, typer.Option(
        min=0, help="Seconds between progress lines when output is not a terminal.")] = 30.0,
) -> None:
    """Train one stage: a world model (cpt, sft, rl on collected episodes) or an agent (agent --env)."""
    if show_options:
        _print_options(stage)
        return
    if out is None:
        raise typer.BadParameter("where to write the result is required", param_hint="--out")
    plugins.factory("trainer", stage)  # an unknown stage: UnknownPluginError, listing the stages
    if stage in WORLD_MODEL_STAGES and (env is not None or mix is not None):
        # refused now, not after torch loads (~20 s): these stages train on --data only
        flag = "--env" if env is not None else "--mix"
        raise typer.BadParameter(f"stage {stage!r} trains a world model on --data; {flag} is an "
                                 "option of the agent stage (train agent --env ...)", param_hint=flag)
    options: dict[str, Any] = {"output_dir": out, "seed": seed}
    for key, value in (("model", model), ("env", env), ("mix", mix)):
        if value is not None:
            options[key] = value
    if reasoning:
        options["reasoning"] = "domain"
    if quiet:
        options["progress"] = False
    if overwrite:
        options["overwrite"] = True
    sets = parse_sets(set_)
    if "output_dir" in sets:  # it would silently replace --out
        raise typer.BadParameter(f"output_dir={sets['output_dir']!r}: give where the result goes "
                                 "with --out only", param_hint="--set")
    if "overwrite" in sets:  # one spelling per concept, as collect and convert have it
        raise typer.BadParameter(f"overwrite={sets['overwrite']!r}: replacing a checkpoint in "
                                 "--out is the flag --overwrite", param_hint="--set")
    options |= sets
    if mix is not None and not 0.0 <= mix <= 1.0:
        raise typer.BadParameter(f"the fraction of real episodes must be in [0, 1], got {mix}",
                                 param_hint="--mix")
    # paths first, in the CLI's own start-up time: the trainer imports torch (15-30 s)
    check_output_dir(out, "--out")
    if data is not None:
        check_input_file(data, "--data")
    if model is not None:
        check_model(model, "--model", allow_hub=options.get("allow_hub", True) is not False)
    if env is not None and env.startswith("sim:"):
        check_model(env.removeprefix("sim:"), "--env")
    episodes = _training_episodes(data) if data is not None else []
    if not quiet and not sys.stdout.isatty() and options.get("progress") is None:
        options["callback"] = ProgressLines(stage, _print_line, every_s=progress_every)
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
    path = trainer.train(episodes, options)
    _leave_process_group()
    console.print(f"{stage} output -> {path}")


def _print_line(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def _leave_process_group() -> None:
    """Under ``torchrun``: wait for every rank, then destroy the process group the trainer joined.

    A rank that exits with a gloo group alive can abort in the group's destructor ("terminate
    called without an active exception") and fail the whole launch. Imports nothing: a process
    that never loaded ``torch.distributed`` has no group.
    """
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


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
