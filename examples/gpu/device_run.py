"""The GPU recipe's driver: train and evaluate a from-scratch model, benchmark the engine and the
simulated-vs-real economics, and write the tables to an output folder.

    bash examples/gpu/run_device.sh                 # on the lent machine: installs, then runs this
    python3 examples/gpu/device_run.py --carry examples/gpu/carry --out OUT [--tiny]

Parts (``--parts``, each timed; one that fails is reported in ``summary.md`` and the next runs):

- ``train``: unpack the carried episodes (``carry/episodes.tar.gz``: the quickstart's splits) into
  the run directory, build the from-scratch model (``preset.py``) at ``<run dir>/init``, and run
  the pipeline of ``--config`` (``scratch.toml``: cpt -> sft -> eval) on it; ``report.md``,
  ``metrics.json``, ``run.json`` and ``fidelity.png`` are copied to OUT.
- ``engine``: ``bench/sim_throughput.py``'s B3 (our paged engine) against stock ``generate`` (B0
  per episode, B1 batched) at each of ``--batches``, with the recipe's model shape in bf16.
- ``domains``: each domain's simulated steps/s (B3 at ``--domain-batch``) with its median action
  and observation lengths, beside its real steps/s from ``carry/real_speed.json`` (measured where
  the real environments run: ``bench/domain_speed.py --real-only``).

``--tiny`` is the CPU dry run of all of it (tests/examples/test_gpu_device_script.py): tiny model,
a few steps, a few transitions, CPU, tiny benchmark workloads. OUT then holds the same files.
A part that would start after ``--budget-s`` seconds (420 by default) is skipped and reported, so
that a slower machine still returns the earlier parts' tables within one 10-minute call.
Exit status 1 when a part failed or was skipped, 2 on bad arguments or (without ``--tiny``) no
CUDA device.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tarfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "bench")]  # preset; sim_throughput, domain_speed

PARTS = ("train", "engine", "domains")
REPORT_FILES = ("report.md", "metrics.json", "run.json", "fidelity.png")
EPISODE_FILES = ("train.jsonl", "heldout.jsonl", "ood.jsonl", "realistic.jsonl", "handwritten.jsonl")
# sim_throughput's model options for the recipe's shape (preset.SHAPES["gpu"], random weights).
GPU_MODEL = ("--device", "cuda", "--dtype", "bfloat16", "--vocab", "8192", "--hidden", "512",
             "--layers", "8", "--heads", "8", "--kv-heads", "2", "--intermediate", "2048",
             "--max-batched-tokens", "16384")
TINY_MODEL = ("--device", "cpu", "--vocab", "512", "--hidden", "64", "--layers", "2", "--heads",
              "2", "--kv-heads", "1", "--intermediate", "128", "--matmul-size", "256",
              "--system-tokens", "16", "--initial-obs-tokens", "8")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--carry", type=Path, default=HERE / "carry",
                   help="folder prepare.py filled: wheels/, episodes.tar.gz, real_speed.json")
    p.add_argument("--out", type=Path, required=True, help="where the tables go ($OUT)")
    p.add_argument("--config", type=Path, default=HERE / "scratch.toml")
    p.add_argument("--run-dir", default=None, help="override the config's [run] dir")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated of {PARTS}")
    p.add_argument("--tiny", action="store_true", help="CPU dry run: tiny sizes, a few steps")
    p.add_argument("--batches", default=None, help="engine batches (default 64,256,512)")
    p.add_argument("--domain-batch", type=int, default=None, help="default 512")
    p.add_argument("--budget-s", type=float, default=None,
                   help="start no part after this many seconds (default 420; none with --tiny)")
    args = p.parse_args(argv)
    args.parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if unknown := sorted(set(args.parts) - set(PARTS)):
        p.error(f"unknown parts {unknown}; choose from {', '.join(PARTS)}")
    default_batches = "2" if args.tiny else "64,256,512"
    args.batches = [int(b) for b in (args.batches or default_batches).split(",")]
    args.domain_batch = args.domain_batch or (2 if args.tiny else 512)
    if args.budget_s is None and not args.tiny:
        args.budget_s = 420.0  # the parts after training take ~2-3 min; a call ends at 600 s
    return args


def machine() -> dict[str, Any]:
    """What ran: accelerator, torch and transformers versions, Python, where the project's
    packages were imported from (the carried wheels' folder), UTC date and time."""
    import torch
    import transformers

    import agentworld.core

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"device": gpu or f"CPU ({platform.processor() or platform.machine()})",
            "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(),
            "agentworld from": str(Path(agentworld.core.__file__).parents[1]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def unpack(archive: Path, dest: Path) -> list[str]:
    """Extract the episode files of ``archive`` (:data:`EPISODE_FILES`, nothing else) into ``dest``.

    Raises:
        FileNotFoundError: no ``archive``, or it holds no ``train.jsonl``.
    """
    if not archive.is_file():
        raise FileNotFoundError(f"{archive} is missing: run examples/gpu/prepare.py first")
    dest.mkdir(parents=True, exist_ok=True)
    found = []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name in EPISODE_FILES:
                with tar.extractfile(member) as src, open(dest / member.name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                found.append(member.name)
    if "train.jsonl" not in found:
        raise FileNotFoundError(f"{archive} holds no train.jsonl (found {found})")
    return found


def tiny_config(config: Any) -> None:
    """Shrink a pipeline config in place to a CPU dry run: 2 optimizer steps per stage, short
    CPT blocks, a handful of greedy eval transitions."""
    for stage in (config.cpt, config.sft):
        for key in ("epochs", "time_budget_s"):
            setattr(stage, key, None)
        stage.max_steps, stage.batch_size, stage.warmup_steps = 2, 2, 0
        stage.mixed_precision = "no"
    config.cpt.max_seq_len = 256  # sft keeps its windows: a system message fills 512 tokens
    config.eval.max_transitions, config.eval.ood_max_transitions = 4, 2
    config.eval.realistic_max_transitions, config.eval.batch_size = 2, 4
    config.eval.num_beams, config.eval.max_new_tokens = 1, 24


def part_train(args: argparse.Namespace) -> dict[str, Any]:
    from rich.console import Console

    from agentworld.app.config import load_config
    from agentworld.app.pipeline import run_pipeline
    from agentworld.core.dataformats import read_any_episodes
    from preset import build_init

    config = load_config(args.config)
    if config.cpt is None or config.eval is None:
        raise ValueError(f"{args.config} needs [cpt] (built from the preset) and [eval] tables")
    config.run.dir = (args.run_dir or config.run.dir).rstrip("/")
    run_dir = Path(config.run.dir)
    config.cpt.model = str(run_dir / "init")
    if args.tiny:
        tiny_config(config)
    files = unpack(args.carry / "episodes.tar.gz", run_dir / "episodes")
    episodes = read_any_episodes(str(run_dir / "episodes" / "train.jsonl"))[0]
    shape, vocab = ("tiny", 512) if args.tiny else ("gpu", 8192)
    init = build_init(episodes, shape, vocab, config.cpt.model, seed=config.run.seed)
    print(f"init: {init['parameters'] / 1e6:.1f}M parameters, vocabulary {init['vocab_size']}, "
          f"{len(episodes)} training episodes; splits {files}", flush=True)
    state = run_pipeline(config, Console(width=140))
    for name in REPORT_FILES:
        if (run_dir / name).is_file():
            shutil.copy2(run_dir / name, args.out / name)
    return {"init": init, "timings_s": state.timings_s, "facts": state.facts,
            "exact_by_split": exact_by_split(json.loads((run_dir / "metrics.json").read_text()))}


def exact_by_split(metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"split" or "split, non-empty": {"n": transitions, model: mean of the main metric}}``
    from a report's ``metrics.json``."""
    main = metrics["main_metric"]
    rows: dict[str, dict[str, Any]] = {}
    for key, suffix in (("by_split", ""), ("by_split_nonempty", ", non-empty")):
        for model, splits in metrics[key].items():
            for split, scores in splits.items():
                row = rows.setdefault(split + suffix, {"n": scores[main]["n"]})
                row[model] = scores[main]["mean"]
    return dict(sorted(rows.items()))


def part_engine(args: argparse.Namespace) -> dict[str, Any]:
    import sim_throughput

    model = TINY_MODEL if args.tiny else GPU_MODEL
    reports = {}
    for batch in args.batches:
        argv = ["--arms", "B0,B1,B3", "--episodes", str(batch), "--no-single-episode", *model]
        if args.tiny:
            argv += ["--steps", "2", "--action-tokens", "4", "--obs-tokens", "4",
                     "--b0-episodes", "2", "--batch-episodes", "2"]
        reports[batch] = sim_throughput.main(argv)
    return reports


def part_domains(args: argparse.Namespace) -> dict[str, Any]:
    import domain_speed

    path = args.carry / "real_speed.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run examples/gpu/prepare.py first")
    real = json.loads(path.read_text())
    extra = TINY_MODEL if args.tiny else GPU_MODEL
    steps = 2 if args.tiny else 8
    rows = {}
    for name, r in real["domains"].items():
        sim = domain_speed.simulated(args.domain_batch, steps, r["action_tokens"],
                                     r["obs_tokens"], extra=extra)
        rows[name] = r | {"sim_steps_per_s": sim, "batch": args.domain_batch,
                          "sim_over_real": sim / r["real_steps_per_s"]}
    return {"real_host": real.get("host"), "real_date": real.get("date"), "rows": rows}


def engine_table(reports: dict[int, Any]) -> list[str]:
    lines = ["| batch | B3 steps/s | B0 steps/s | B1 steps/s | B3 / B0 | B3 / B1 | B3 prefix hits "
             "from step 5 | B3 MFU | B0, B1 tokens = B3's |", "|" + " --- |" * 9]
    for batch, rep in reports.items():
        arms = rep["arms"]
        sps = {a: arms[a]["env_steps_per_s"] if a in arms else float("nan") for a in ("B0", "B1", "B3")}
        hit = arms.get("B3", {}).get("prefix_hit_rate_from_step5")
        same = all(arms[a].get("same_tokens_as_reference") is not False for a in arms)
        lines.append(f"| {batch} | {sps['B3']:.1f} | {sps['B0']:.2f} | {sps['B1']:.1f} | "
                     f"{sps['B3'] / sps['B0']:.1f}x | {sps['B3'] / sps['B1']:.1f}x | "
                     f"{'-' if hit is None else f'{hit:.1%}'} | "
                     f"{arms.get('B3', {}).get('mfu', float('nan')):.2%} | {'yes' if same else 'NO'} |")
    return lines


def domains_table(result: dict[str, Any]) -> list[str]:
    lines = [f"Real side measured on {result['real_host']} ({result['real_date']}); simulated "
             "side here.", "", "| domain | reset s | real steps/s | action tokens | observation "
             "tokens | simulated steps/s | batch | simulated / real |", "|" + " --- |" * 8]
    for name, r in result["rows"].items():
        lines.append(f"| {name} | {r['reset_s']:.3f} | {r['real_steps_per_s']:.1f} | "
                     f"{r['action_tokens']} | {r['obs_tokens']} | {r['sim_steps_per_s']:.1f} | "
                     f"{r['batch']} | {r['sim_over_real']:.2f} |")
    return lines


def write_summary(out: Path, facts: dict[str, Any], results: dict[str, Any],
                  errors: dict[str, str], timings: dict[str, float]) -> None:
    lines = ["# GPU recipe run", "", *(f"- {k}: {v}" for k, v in facts.items()),
             "- part wall times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()), ""]
    if "train" in results:
        t = results["train"]
        lines += ["## Training and evaluation (report.md has the tables)", "",
                  f"- from scratch: {t['init']['parameters'] / 1e6:.1f}M parameters, "
                  f"vocabulary {t['init']['vocab_size']}",
                  f"- stage wall times (s): {json.dumps(t['timings_s'])}", ""]
        models = [m for m in next(iter(t["exact_by_split"].values()), {}) if m != "n"]
        lines += [f"| {t['facts']['eval']['decoding']}: exact match | n | {' | '.join(models)} |",
                  "|" + " --- |" * (len(models) + 2)]
        lines += [f"| {split} | {row['n']} | " + " | ".join(f"{row[m]:.3f}" for m in models) + " |"
                  for split, row in t["exact_by_split"].items()] + [""]
    if "engine" in results:
        lines += ["## Engine: B3 against stock generate", "", *engine_table(results["engine"]), ""]
    if "domains" in results:
        lines += ["## Simulated against real steps/s", "", *domains_table(results["domains"]), ""]
    for part, error in errors.items():
        lines += [f"## {part}: FAILED", "", "```", error, "```", ""]
    (out / "summary.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if not args.tiny and not torch.cuda.is_available():
        print("no CUDA device: this is the GPU recipe (pass --tiny for the CPU dry run)",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    facts = machine() | {"mode": "tiny CPU dry run" if args.tiny else "full"}
    parts: dict[str, Callable[[argparse.Namespace], Any]] = {
        "train": part_train, "engine": part_engine, "domains": part_domains}
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    timings: dict[str, float] = {}
    start = time.perf_counter()
    for name in args.parts:
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            if args.budget_s is not None and t0 - start > args.budget_s:
                raise TimeoutError(f"not started: {t0 - start:.0f} s spent, over --budget-s "
                                   f"{args.budget_s:.0f}")
            results[name] = parts[name](args)
        except Exception:  # reported in summary.md; the next part still runs
            errors[name] = traceback.format_exc()[-3000:]
            print(errors[name], file=sys.stderr, flush=True)
        timings[name] = time.perf_counter() - t0
        write_summary(args.out, facts, results, errors, timings)  # after every part
        (args.out / "results.json").write_text(json.dumps(
            {"facts": facts, "timings_s": timings, "errors": errors, "results": results},
            indent=1, default=str))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
