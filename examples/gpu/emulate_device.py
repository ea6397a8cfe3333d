"""A Python environment here that holds only what the lent accelerator machine's image holds, for
the GPU recipe's CPU dry run (tests/test_gpu_recipe.py).

    uv run python examples/gpu/emulate_device.py /tmp/device     # prints the emulated python3
    PYTHON=/tmp/device/venv/bin/python OUT=/tmp/out CARRY=... bash examples/gpu/run_device.sh --tiny

A fresh ``uv venv --seed`` (pip inside, as on the device) whose one ``.pth`` line adds a folder of
symbolic links to the top-level modules of each distribution named in ``device_packages.txt``
that this interpreter has installed (torch, transformers, numpy, ...). The project's packages and
the rest of its dependencies (pydantic, gymnasium, openai, ...) are not there: a dry run in it
finds a wheel missing from the wheelhouse as the device would, by failing to import.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wheelhouse import device_packages, normalize  # noqa: E402


def link_site(dest: Path, names: frozenset[str]) -> list[str]:
    """Symbolic links in ``dest`` to the top-level files and folders (modules, ``.dist-info``) of
    the installed distributions whose normalised name is in ``names``; returns those names."""
    dest.mkdir(parents=True, exist_ok=True)
    linked = []
    for dist in metadata.distributions():
        name = normalize(dist.metadata["Name"] or "")
        if name not in names or not dist.files:
            continue
        linked.append(name)
        for top in {f.parts[0] for f in dist.files}:
            if top == ".." or top.endswith(".pth") or top.startswith("__editable__"):
                continue
            source, link = Path(str(dist.locate_file(top))), dest / top
            if source.exists() and not link.exists():
                link.symlink_to(source)
    return sorted(set(linked))


def emulate(root: Path) -> Path:
    """Build the environment under ``root`` (``venv/`` and ``device-site/``); returns its python.

    Raises:
        subprocess.CalledProcessError: ``uv venv --seed`` failed (its pip comes from the uv
            cache, or PyPI the first time).
    """
    venv = root / "venv"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    subprocess.run(["uv", "venv", "-q", "--seed", "--python", sys.executable, str(venv)],
                   check=True, capture_output=True, env=env)
    site = root / "device-site"
    link_site(site, device_packages() - {"pip"})  # pip: the venv's own
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], check=True, capture_output=True, text=True)
    (Path(purelib.stdout.strip()) / "device_image.pth").write_text(f"{site}\n")
    return python


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIR   (here: {sysconfig.get_python_version()})")
    print(emulate(Path(sys.argv[1]).resolve()))
