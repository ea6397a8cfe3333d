"""Where the servers' API key comes from (issue 30, item 3): ``--api-key KEY`` still works but
warns that ``ps`` shows it; ``--api-key-file PATH`` reads it from a file only its owner may
read (a file open to group or others is refused with a one-line error); a real ``agentworld
serve`` started with a key file enforces the key while its command line does not hold it."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from agentworld.sim.server.auth import COMMAND_LINE_KEY_WARNING, read_api_key_file
from loopback import serve_cli
from typer.testing import CliRunner

KEY = "k3y-for-tests-0123456789"


def key_file(tmp_path: Path, mode: int, text: str = KEY + "\n") -> Path:
    path = tmp_path / f"key-{mode:o}"
    path.write_text(text)
    path.chmod(mode)
    return path


def cli():
    from agentworld.app.cli import app
    from agentworld.core import plugins

    if not any(c.name == "serve" for c in app.registered_commands):
        plugins.load_plugins().hook.register_commands(cli=app)
    return app


def test_a_key_file_must_be_private(tmp_path: Path) -> None:
    assert read_api_key_file(key_file(tmp_path, 0o600)) == KEY
    assert read_api_key_file(key_file(tmp_path, 0o400)) == KEY
    for mode in (0o644, 0o640, 0o604, 0o620):
        with pytest.raises(ValueError, match=f"mode {mode:03o}.*chmod 600") as error:
            read_api_key_file(key_file(tmp_path, mode))
        assert "\n" not in str(error.value) and str(tmp_path) in str(error.value)
    with pytest.raises(ValueError, match="must hold one key .* got nothing"):
        read_api_key_file(key_file(tmp_path, 0o600, "\n"))
    with pytest.raises(ValueError, match="cannot be read: No such file"):
        read_api_key_file(tmp_path / "missing")


def test_the_cli_warns_about_a_key_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTWORLD_API_KEY", raising=False)
    monkeypatch.delenv("AGENTWORLD_SERVE_API_KEY", raising=False)
    runner, app = CliRunner(), cli()
    base = ["serve-openai", "/nowhere/ckpt", "--host", "0.0.0.0"]  # needs a key
    on_line = runner.invoke(app, [*base, "--api-key", KEY])
    assert COMMAND_LINE_KEY_WARNING in on_line.output
    assert "/nowhere/ckpt" in str(on_line.exception)  # the key was taken: loading failed
    from_file = runner.invoke(app, [*base, "--api-key-file", str(key_file(tmp_path, 0o600))])
    assert "process list" not in from_file.output and "/nowhere/ckpt" in str(from_file.exception)
    monkeypatch.setenv("AGENTWORLD_API_KEY", KEY)
    from_env = runner.invoke(app, base)
    assert "process list" not in from_env.output and "/nowhere/ckpt" in str(from_env.exception)
    monkeypatch.delenv("AGENTWORLD_API_KEY")
    shared = runner.invoke(app, [*base, "--api-key-file", str(key_file(tmp_path, 0o644))])
    assert shared.exit_code == 2 and "chmod 600" in shared.output
    both = runner.invoke(
        app, [*base, "--api-key", KEY, "--api-key-file", str(key_file(tmp_path, 0o600))]
    )
    assert both.exit_code == 2 and "not both" in both.output
    serve = ["serve", "--domain", "frozenlake-4x4", "--real", "--host", "0.0.0.0"]
    refused = runner.invoke(app, [*serve, "--api-key-file", str(key_file(tmp_path, 0o644))])
    assert refused.exit_code == 2 and "chmod 600" in refused.output


def test_serve_with_a_key_file_enforces_it_and_keeps_it_off_the_command_line(
    tmp_path: Path,
) -> None:
    pytest.importorskip("openenv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTWORLD_API_KEY")}
    args = ["--domain", "frozenlake-4x4", "--real", "--api-key-file", str(key_file(tmp_path, 0o600))]
    with serve_cli(args, tmp_path / "server.log", env, start_s=120) as (url, process):
        assert httpx.get(f"{url}/schema").status_code == 401
        wrong = httpx.get(f"{url}/schema", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        right = httpx.get(f"{url}/schema", headers={"Authorization": f"Bearer {KEY}"})
        assert right.status_code == 200 and "action" in right.json()
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes()
        assert b"--api-key-file" in cmdline and KEY.encode() not in cmdline
    log = (tmp_path / "server.log").read_text()
    assert "process list" not in log and KEY not in log  # a key the user gave is not echoed
    assert "token: the API key you gave" in log
