"""Fill the folder a device call carries (``examples/gpu/carry``, ignored by git), here, where PyPI
is reachable and the real environments' sandboxes run.

    uv run python examples/gpu/prepare.py                         # collect, wheels, real speeds
    uv run python examples/gpu/prepare.py --data runs/quickstart/episodes   # reuse a collection

The folder gets:

- ``wheels/``: ``wheelhouse.py``'s wheels for the device's CPython 3.12 (``--python-version``);
- ``episodes.tar.gz``: the quickstart's episode splits (``train``, ``heldout``, ``ood``,
  ``realistic``, ``handwritten``), collected with the quickstart's own ``[collect]`` table into
  ``runs/gpu-data`` (a rerun resumes it) unless ``--data`` names a folder that holds them;
- ``real_speed.json``: ``bench/domain_speed.py --real-only`` for ``--domains``: the real side of
  the simulated-vs-real table, measured here (the device may not run the sandboxes);
- ``manifest.json``: what went in, sizes, date.

Refuses (exit 1, one line) a folder over :data:`LIMIT_MIB`: a device call carries the working
tree (~7 MiB) and its carried paths in 64 MiB at most.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from wheelhouse import build  # noqa: E402

LIMIT_MIB = 52
SPLITS = ("train", "heldout", "ood", "realistic", "handwritten")


def collect(run_dir: Path, episodes: int | None) -> Path:
    """The full quickstart's (``--full``) ``[collect]`` stage alone into ``run_dir``
    (``episodes`` overrides its count); returns the episodes folder. A killed collection
    resumes from its part file."""
    from agentworld.app.config import quickstart_config
    from agentworld.app.pipeline import run_pipeline

    config = quickstart_config(full=True)  # the full recipe's 3,000 episodes
    config.run.dir = str(run_dir)
    if episodes is not None:
        config.collect.episodes = episodes
    for stage in ("cpt", "sft", "rl", "eval", "simulate"):
        setattr(config, stage, None)
    run_pipeline(config)
    return run_dir / "episodes"


def pack(episodes_dir: Path, archive: Path) -> list[str]:
    """``tar.gz`` of the split files present in ``episodes_dir`` (flat names).

    Raises:
        FileNotFoundError: no ``train.jsonl`` there.
    """
    if not (episodes_dir / "train.jsonl").is_file():
        raise FileNotFoundError(f"{episodes_dir} has no train.jsonl: collect first or fix --data")
    names = [f"{s}.jsonl" for s in SPLITS if (episodes_dir / f"{s}.jsonl").is_file()]
    tmp = archive.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz", compresslevel=9) as tar:
        for name in names:
            tar.add(episodes_dir / name, arcname=name)
    tmp.replace(archive)
    return names


def real_speed(dest: Path, domains: str, episodes: int) -> None:
    """``bench/domain_speed.py --real-only --json dest`` in a fresh process (this interpreter)."""
    subprocess.run([sys.executable, str(ROOT / "bench" / "domain_speed.py"), "--real-only",
                    "--domains", domains, "--episodes", str(episodes), "--json", str(dest)],
                   check=True, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--carry", type=Path, default=HERE / "carry")
    p.add_argument("--data", type=Path, default=None, help="an episodes folder to reuse")
    p.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "gpu-data",
                   help="where a collection goes")
    p.add_argument("--episodes", type=int, default=None, help="default: the full quickstart's 3,000")
    p.add_argument("--python-version", default="3.12", help="the device's python3 X.Y")
    p.add_argument("--domains", default="terminal,mcp,search,swe",
                   help="domains whose real steps/s are measured ('' for none)")
    p.add_argument("--real-episodes", type=int, default=12)
    args = p.parse_args(argv)
    args.carry.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    wheels = build(args.carry / "wheels", args.python_version)
    print(f"wheels: {wheels['bytes'] / 2**20:.1f} MiB ({time.perf_counter() - t0:.0f} s)", flush=True)
    episodes_dir = args.data or collect(args.run_dir, args.episodes)
    splits = pack(episodes_dir, args.carry / "episodes.tar.gz")
    if args.domains:
        real_speed(args.carry / "real_speed.json", args.domains, args.real_episodes)
    total = sum(p.stat().st_size for p in args.carry.rglob("*") if p.is_file())
    manifest = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "python": args.python_version, "third_party": wheels["third_party"],
                "members": wheels["members"], "splits": splits, "episodes_from": str(episodes_dir),
                "bytes": total}
    (args.carry / "manifest.json").write_text(json.dumps(manifest, indent=2))
    if total > LIMIT_MIB * 2**20:
        print(f"{args.carry} holds {total / 2**20:.1f} MiB, over the {LIMIT_MIB} MiB a device call "
              "can carry beside the working tree: collect fewer episodes (--episodes)",
              file=sys.stderr)
        return 1
    print(f"{args.carry}: {total / 2**20:.1f} MiB ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
