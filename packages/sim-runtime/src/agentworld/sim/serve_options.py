"""The command-line options ``serve`` and ``serve-openai`` share, declared once.

Imported only inside the ``register_commands`` hook (:mod:`agentworld.sim.plugin`), which the
``agentworld`` CLI calls: typer is the application's dependency, never imported by the
library itself.
"""

from pathlib import Path
from typing import Annotated

import typer

Host = Annotated[str, typer.Option(help="Interface to bind; loopback unless you mean to expose it.")]
Port = Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")]
Device = Annotated[str, typer.Option(help="hf backend: 'auto', 'cpu', 'cuda', ...")]
Dtype = Annotated[str, typer.Option(help="'auto', 'float32', 'bfloat16' or 'float16'.")]
AllowHub = Annotated[bool, typer.Option(
    "--allow-hub/--no-allow-hub",
    help="CHECKPOINT may be a Hugging Face Hub id 'org/name' (downloads).")]
ApiKeyFile = Annotated[Path | None, typer.Option(
    help="Read the API key from this file (mode 600: owner only).")]
