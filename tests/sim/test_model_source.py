"""One rule for where a model comes from (issue 26): a local directory, or a hub id while
allow_hub is on (the default), in training, eval, simulate and serve alike; offline, one line."""

from __future__ import annotations

import pytest
from agentworld.app.cli import app
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.backends.model_source import ModelSourceError, is_hub_source
from typer.testing import CliRunner

MISSING = "agentworld-test/no-such-model"


@pytest.fixture
def offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def test_the_rule(tmp_path):
    (tmp_path / "file").write_text("x")
    assert is_hub_source(str(tmp_path), allow_hub=False) is False
    assert is_hub_source(MISSING, allow_hub=True) is True
    with pytest.raises(ModelSourceError, match="is a file, not a checkpoint directory"):
        is_hub_source(str(tmp_path / "file"), allow_hub=True)
    with pytest.raises(ModelSourceError, match="downloads are off; to download it, drop --no-allow-hub"):
        is_hub_source(MISSING, allow_hub=False)
    for local in (str(tmp_path / "nope"), "./org/name", "nope", "a/b/c"):
        with pytest.raises(FileNotFoundError, match="does not exist"):
            is_hub_source(local, allow_hub=True)


def test_a_hub_id_offline_is_one_line(offline):
    with pytest.raises(ModelSourceError, match="downloads are off"):
        HFBackend().load(MISSING, allow_hub=False)
    with pytest.raises(ModelSourceError) as err:
        HFBackend().load(MISSING)
    assert str(err.value).startswith(f"cannot load {MISSING!r} from the Hugging Face Hub: ")
    assert "\n" not in str(err.value) and "offline?" in str(err.value)


def test_eval_and_simulate_follow_the_rule(offline, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("")
    runner = CliRunner()
    done = runner.invoke(app, ["eval", "--data", str(data), "--model", MISSING, "--out", str(tmp_path / "o"),
                               "--no-allow-hub"])
    # refused as a bad option before anything loads (exit 2, the rule's message in the usage box)
    assert done.exit_code == 2 and "downloads are off" in " ".join(done.output.replace("│", "").split())
    done = runner.invoke(app, ["simulate", "--model", MISSING], input="ls\n")
    assert isinstance(done.exception, ModelSourceError)
    assert "from the Hugging Face Hub" in str(done.exception)


def test_serve_openai_follows_the_rule(offline):
    from agentworld.core import plugins

    plugins.load_plugins().hook.register_commands(cli=app)
    runner = CliRunner()
    done = runner.invoke(app, ["serve-openai", MISSING, "--no-allow-hub"])
    assert isinstance(done.exception, ModelSourceError) and "downloads are off" in str(done.exception)
    done = runner.invoke(app, ["serve-openai", MISSING])
    assert isinstance(done.exception, ModelSourceError)
    assert "from the Hugging Face Hub" in str(done.exception)
