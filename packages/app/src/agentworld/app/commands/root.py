"""The root ``agentworld`` typer app, its console and the options sub-commands share."""

from __future__ import annotations

import shutil
from typing import Annotated, Any

import typer
from rich.console import Console

#: Below this many columns rich's option tables cut long option names (``--max-transitio…``);
#: there the help is click's plain text, which wraps and never cuts.
RICH_HELP_MIN_COLUMNS = 100

app = typer.Typer(
    name="agentworld",
    rich_markup_mode="rich" if shutil.get_terminal_size().columns >= RICH_HELP_MIN_COLUMNS else None,
    help="Train language world models of agent environments and serve them as RL simulators.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console(soft_wrap=True)  # long lines stay whole in logs and at 80 columns

# One name per concept across commands: --model is the model (preset, checkpoint directory or
# hub id), --out where a command writes; the old names stay as aliases.
RunDir = Annotated[str, typer.Option(
    "--out", "--run-dir", help="Run directory (local path or fsspec URL; --run-dir: the old name).")]
Seed = Annotated[int, typer.Option(help="Random seed.")]
AllowHub = Annotated[bool, typer.Option(
    "--allow-hub/--no-allow-hub", help="MODEL may be a Hugging Face Hub id 'org/name' (downloads); as allow_hub in training.")]


def parse_sets(values: list[str] | None) -> dict[str, Any]:
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
