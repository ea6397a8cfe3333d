"""The API key a serving command runs with, from its ``--api-key``, ``--api-key-file`` and
environment options: shared by ``serve-openai`` (:mod:`agentworld.sim.plugin`) and ``serve``
(:mod:`agentworld.sim.serve_command`). typer is imported when a key is resolved."""

from __future__ import annotations

from pathlib import Path


def resolve_api_key(
    api_key: str | None, api_key_file: Path | None, env_names: tuple[str, ...]
) -> str | None:
    """The server's API key: ``--api-key`` (with a warning: ``ps`` shows it), else the file
    ``--api-key-file``, else the first of the environment variables ``env_names`` set.

    Raises:
        typer.BadParameter: Both ``--api-key`` and ``--api-key-file`` were given, or the file
            cannot serve (see :func:`agentworld.sim.server.auth.read_api_key_file`).
    """
    import os

    import typer
    from agentworld.sim.server.auth import COMMAND_LINE_KEY_WARNING, read_api_key_file

    if api_key is not None:
        if api_key_file is not None:
            raise typer.BadParameter(
                "give the key once: --api-key-file or --api-key, not both",
                param_hint="--api-key-file",
            )
        typer.echo(COMMAND_LINE_KEY_WARNING, err=True)
        return api_key
    if api_key_file is not None:
        try:
            return read_api_key_file(api_key_file)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--api-key-file") from None
    return next((os.environ[name] for name in env_names if os.environ.get(name)), None)
