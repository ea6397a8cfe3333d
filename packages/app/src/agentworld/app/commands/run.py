"""``agentworld run PIPELINE`` and ``agentworld quickstart``: the pipeline runner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.app.commands.root import RunDir, app, console


@app.command("run")
def run_cmd(
    pipeline: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Pipeline TOML file.")],
    run_dir: Annotated[str | None, typer.Option(
        "--out", "--run-dir", help="Override the run table's dir (--run-dir: the old name).")] = None,
) -> None:
    """Run the stages composed in a pipeline file (collect, cpt, sft, rl, eval, simulate)."""
    from agentworld.app.config import load_config
    from agentworld.app.pipeline import run_pipeline

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
    budget_scale: Annotated[float, typer.Option(
        "--budget-scale", "--time-scale", min=0.01,
        help="Multiply the training budgets (optimizer steps; --time-scale is the old name).")] = 1.0,
    full: Annotated[bool, typer.Option(
        "--full", help="The full recipe (quickstart-full.toml): 3x the episodes, ~4x the training, "
        "beam search; about an hour on 2 CPU cores without bf16.")] = False,
) -> None:
    """The main job on its embedded default: collect -> cpt -> sft -> eval -> simulate (terminal).

    The default is sized for 15 minutes on a 2-core x86 host without bf16 (README.md);
    ``--full`` runs the full recipe."""
    from agentworld.app.config import quickstart_config
    from agentworld.app.pipeline import run_pipeline

    config = quickstart_config(full)
    config.run.dir = run_dir
    if episodes and config.collect:
        config.collect.episodes = episodes
    for stage in (config.cpt, config.sft):
        if stage is not None:
            stage.scale_budgets(budget_scale)
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
