"""examples/gpu: the GPU recipe that fits a lent accelerator machine, dry-run on this CPU host.

The dry run takes the device's path end to end: ``prepare.py`` collects a few real terminal
episodes and builds the wheelhouse (for this interpreter's version, as it would for the device's
3.12), ``emulate_device.py`` makes an interpreter that holds only what the device image holds,
and ``run_device.sh --tiny`` installs the wheels there with ``pip --no-index --no-deps --target``
and runs the driver: train + evaluate through the pipeline, the engine benchmark, the
simulated-vs-real table. The wheels come from PyPI the first time, then from
``~/.cache/agentworld/gpu-wheels``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
GPU = ROOT / "examples" / "gpu"
sys.path.insert(0, str(GPU))

import device_run  # noqa: E402
import prepare  # noqa: E402
import wheelhouse  # noqa: E402

needs_uv = pytest.mark.skipif(shutil.which("uv") is None, reason="needs the uv executable")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return env | extra


def test_to_carry_takes_what_the_image_lacks_or_pins_and_never_the_torch_stack() -> None:
    needed = {"torch": "2.15.0", "triton": "3.9.0", "nvidia-cublas": "13", "cuda-toolkit": "13",
              "numpy": "2.5.5", "pydantic": "2.14.4", "transformers": "5.24.0", "rich": "15"}
    provided = frozenset({"torch", "numpy", "transformers", "rich"})
    assert wheelhouse.to_carry(needed, provided) == {"pydantic": "2.14.4", "transformers": "5.24.0"}
    assert wheelhouse.wheel_key("Typing_Extensions-4.16.0-py3-none-any.whl") == (
        "typing-extensions", "4.16.0")


@needs_uv
def test_the_lock_closure_for_the_device_names_its_missing_packages() -> None:
    carry = wheelhouse.to_carry(wheelhouse.closure("3.12"), wheelhouse.device_packages())
    # What the image lacks and the recipe imports; what the image has (torch's stack, numpy)
    # never travels.
    assert {"pydantic", "pydantic-core", "gymnasium", "openai", "rapidfuzz", "pexpect",
            "docstring-parser", "transformers", "huggingface-hub"} <= set(carry)
    assert not {"torch", "triton", "numpy", "scipy", "accelerate", "pyarrow"} & set(carry)
    assert not [n for n in carry if n.startswith(("nvidia-", "cuda-"))]
    # markers are evaluated for the target: click's Windows-only colorama is dropped
    assert "colorama" not in wheelhouse.closure("3.12")


def test_driver_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        device_run.parse_args(["--out", str(tmp_path), "--parts", "train,benchh"])
    with pytest.raises(FileNotFoundError, match="run examples/gpu/prepare.py first"):
        device_run.unpack(tmp_path / "episodes.tar.gz", tmp_path / "episodes")
    with pytest.raises(FileNotFoundError, match="no train.jsonl"):
        prepare.pack(tmp_path, tmp_path / "episodes.tar.gz")
    assert not (tmp_path / "episodes.tar.gz").exists()


def test_run_device_without_wheels_says_what_to_do(tmp_path: Path) -> None:
    result = subprocess.run(["bash", str(GPU / "run_device.sh"), "--tiny"], capture_output=True,
                            text=True, env=clean_env(CARRY=str(tmp_path), OUT=str(tmp_path / "out")))
    assert result.returncode == 2
    said = result.stdout + result.stderr  # the script tees both into $OUT/log
    assert "no wheels in" in said and "prepare.py" in said
    assert "no wheels in" in (tmp_path / "out" / "log").read_text()


@pytest.mark.slow
@needs_uv
def test_cpu_dry_run_of_the_device_script(tmp_path: Path) -> None:
    carry, out, site = tmp_path / "carry", tmp_path / "out", tmp_path / "site"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([sys.executable, str(GPU / "prepare.py"), "--carry", str(carry),
                    "--run-dir", str(tmp_path / "data"), "--episodes", "12",
                    "--python-version", version, "--domains", "terminal", "--real-episodes", "2"],
                   check=True, cwd=ROOT, env=clean_env(), capture_output=True)
    manifest = json.loads((carry / "manifest.json").read_text())
    assert "pydantic" in manifest["third_party"] and "train" in " ".join(manifest["splits"])

    python = subprocess.run([sys.executable, str(GPU / "emulate_device.py"), str(tmp_path / "dev")],
                            check=True, capture_output=True, text=True, env=clean_env())
    python = python.stdout.strip()
    bare = subprocess.run([python, "-c", "import torch, accelerate; import pydantic"],
                          capture_output=True, text=True, env=clean_env())
    assert "No module named 'pydantic'" in bare.stderr  # as on the device image

    result = subprocess.run(
        ["bash", str(GPU / "run_device.sh"), "--tiny", "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, cwd=tmp_path,
        env=clean_env(PYTHON=python, CARRY=str(carry), SITE=str(site), OUT=str(out)))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert {"log", "summary.md", "results.json", "report.md", "metrics.json", "run.json"} <= {
        p.name for p in out.iterdir()}
    report = json.loads((out / "results.json").read_text())
    assert report["errors"] == {}
    assert Path(report["facts"]["agentworld from"]).parent == site  # the carried wheels
    train = report["results"]["train"]
    assert train["init"]["parameters"] > 1e6 and train["init"]["vocab_size"] == 512
    assert {"cpt", "sft", "eval"} <= set(train["timings_s"])
    assert train["facts"]["eval"]["transitions"] == 4
    engine = report["results"]["engine"]["2"]
    assert set(engine["arms"]) == {"B0", "B1", "B3"}
    assert all(arm["env_steps_per_s"] > 0 for arm in engine["arms"].values())
    row = report["results"]["domains"]["rows"]["terminal"]
    assert row["sim_steps_per_s"] > 0 and row["real_steps_per_s"] > 0 and row["batch"] == 2
    summary = (out / "summary.md").read_text()
    assert "| 2 |" in summary and "| terminal |" in summary and "FAILED" not in summary
    assert "greedy: exact match | n | model | copy-previous | empty |" in summary
    assert train["exact_by_split"]["in-distribution"]["n"] == 4


def test_a_part_past_the_time_budget_is_skipped_and_reported(tmp_path: Path) -> None:
    status = device_run.main(["--tiny", "--out", str(tmp_path), "--carry", str(tmp_path),
                              "--parts", "domains", "--budget-s", "0"])
    assert status == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "## domains: FAILED" in summary and "over --budget-s 0" in summary
    assert json.loads((tmp_path / "results.json").read_text())["results"] == {}


def test_the_gpu_preset_builds_with_the_copy_prior_and_scratch_toml_validates(tmp_path: Path) -> None:
    from agentworld.app.config import load_config
    from agentworld.app.pipeline import RunState, check_stages
    from episode_factory import make_episode
    from preset import SHAPES, build_init

    init = tmp_path / "init"
    built = build_init([make_episode(6, f"e{i}") for i in range(4)], "gpu", 8192, init)
    config = json.loads((init / "config.json").read_text())
    assert config["hidden_size"] == 512 and config["num_hidden_layers"] == 8
    embedding = built["vocab_size"] * SHAPES["gpu"]["hidden_size"]
    assert 29e6 < built["parameters"] - embedding < 32e6  # tens of millions without the vocabulary
    assert (init / "tokenizer.json").is_file()
    with pytest.raises(ValueError, match="valid shapes: gpu, tiny"):
        build_init([make_episode()], "huge", 8192, tmp_path / "x")

    pipeline = load_config(GPU / "scratch.toml")
    pipeline.cpt.model = str(init)
    check_stages(pipeline, RunState(dir=str(tmp_path), seed=0, domain="terminal"))  # no raise
    assert pipeline.stages() == ["cpt", "sft", "eval"]


def test_the_gpu_benchmark_options_parse() -> None:
    """The engine and domain parts' sim_throughput options for the device (only the dry run's
    tiny ones run here): a typo would surface only on the GPU."""
    import domain_speed  # noqa: F401  (bench/, on the path through device_run)
    import sim_throughput

    args = sim_throughput.parse_args(["--arms", "B0,B1,B3", "--episodes", "512",
                                      "--no-single-episode", *device_run.GPU_MODEL])
    assert (args.device, args.dtype, args.hidden // args.heads) == ("cuda", "bfloat16", 64)
    assert args.arms == ["B0", "B1", "B3"] and args.max_batched_tokens == 16384
    full = device_run.parse_args(["--out", "x"])
    assert full.batches == [64, 256, 512] and full.domain_batch == 512 and full.budget_s == 420
