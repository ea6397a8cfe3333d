"""The wheels a bare accelerator machine needs to run the project, built where PyPI is reachable.

    uv run python examples/gpu/wheelhouse.py DEST                   # for the device: CPython 3.12
    uv run python examples/gpu/wheelhouse.py DEST --python-version 3.11   # for this host's dry run

The lent machines (``/work/.library/device``) have no network; their python3 (3.12) holds torch,
transformers, peft and accelerate but not pydantic, gymnasium, openai and others the project
imports. DEST receives:

- the project's own workspace members that the GPU recipe imports, built as wheels by ``uv build``
  (:data:`MEMBERS`; the other domains are left out: their plugins would only be skipped there);
- a wheel of every third-party distribution those members need (the ``uv.lock`` closure, resolved
  by ``uv export``, markers evaluated for the target Python on x86-64 Linux) that the machine's
  image lacks (``device_packages.txt``), plus :data:`FORCE`: packages the image has at another
  version than the lock, whose APIs the code calls (transformers' continuous batching, peft);
- never the torch stack (:data:`NEVER`): the machine's own CUDA build of torch is the point.

Downloads are ``pip download --no-deps --only-binary=:all:`` for the target interpreter and
manylinux x86-64, kept in ``~/.cache/agentworld/gpu-wheels/<tag>`` so that a second build (and the
test suite's dry run) needs no network. Everything in DEST installs with
``python3 -m pip install --no-index --no-deps --target SITE DEST/*.whl`` (``run_device.sh``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# Workspace members the recipe imports (agentworld-core comes with them; built too).
MEMBERS = ("agentworld-core", "agentworld-app", "agentworld-trainers", "agentworld-sim",
           "agentworld-rewards", "agentworld-domain-terminal")
# In the image, but at other versions than uv.lock's: carried so the code runs what it was tested
# with. bench/sim_throughput.py imports transformers' continuous-batching API (newer than the
# image's transformers 5.17), whose hub client comes along (the image has huggingface-hub 1.33);
# pydantic needs typing-extensions >= 4.16.
FORCE = frozenset({"transformers", "huggingface-hub", "peft", "typing-extensions"})
NEVER = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64")


def normalize(name: str) -> str:
    """PEP 503 normalised distribution name (``Typing_Extensions`` -> ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def device_packages(path: Path = HERE / "device_packages.txt") -> frozenset[str]:
    """Normalised names of the distributions the machine's image has (``#`` starts a comment)."""
    words = [w for line in path.read_text().splitlines() for w in line.split("#")[0].split()]
    return frozenset(normalize(w) for w in words)


def marker_env(python_version: str) -> dict[str, str]:
    """PEP 508 marker variables of CPython ``python_version`` (``"3.12"``) on x86-64 Linux."""
    return {"python_version": python_version, "python_full_version": f"{python_version}.0",
            "platform_machine": "x86_64", "sys_platform": "linux", "platform_system": "Linux",
            "os_name": "posix", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "platform_release": "",
            "platform_version": "", "implementation_version": f"{python_version}.0", "extra": ""}


def closure(python_version: str, members: tuple[str, ...] = MEMBERS) -> dict[str, str]:
    """``{name: version}`` of every third-party distribution ``members`` need on the target, from
    ``uv export --frozen`` (uv.lock; no dev group, no workspace members).

    Raises:
        subprocess.CalledProcessError: uv.lock is out of date or ``uv`` failed.
    """
    env = marker_env(python_version)
    found: dict[str, str] = {}
    for member in members:
        text = subprocess.run(
            ["uv", "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-workspace",
             "--no-annotate", "--no-header", "--package", member],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            requirement, _, marker = line.partition(";")
            if "==" not in requirement or requirement.lstrip().startswith(("#", "-")):
                continue
            if marker.strip() and not Marker(marker.strip()).evaluate(env):
                continue
            name, version = (part.strip() for part in requirement.split("=="))
            found[normalize(name)] = version
    return found


def to_carry(needed: dict[str, str], provided: frozenset[str]) -> dict[str, str]:
    """The part of ``needed`` that must travel: not ``provided`` by the image (or in
    :data:`FORCE`), and never the torch stack."""
    return {name: version for name, version in sorted(needed.items())
            if not NEVER.match(name) and (name not in provided or name in FORCE)}


def wheel_key(filename: str) -> tuple[str, str]:
    """``(normalised name, version)`` of a wheel file name (PEP 427)."""
    name, version = filename.split("-")[:2]
    return normalize(name), version


def download(wanted: dict[str, str], cache: Path, python_version: str) -> list[Path]:
    """Wheel files of ``wanted`` for CPython ``python_version`` on manylinux x86-64, from
    ``cache`` where present, else ``pip download`` (PyPI) into ``cache``.

    Raises:
        RuntimeError: pip found no matching wheel (the message names the distributions).
    """
    cache.mkdir(parents=True, exist_ok=True)
    have = {wheel_key(p.name): p for p in cache.glob("*.whl")}
    missing = [f"{n}=={v}" for n, v in wanted.items() if (n, v) not in have]
    if missing:
        tag = python_version.replace(".", "")
        cmd = ["uvx", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--python-version", python_version, "--implementation", "cp", "--abi", f"cp{tag}",
               "--abi", "abi3", "--abi", "none", "-d", str(cache)]
        cmd += [arg for platform in PLATFORMS for arg in ("--platform", platform)]
        result = subprocess.run(cmd + ["--platform", "any"] + missing, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"pip download failed for some of {missing}: "
                               f"{result.stderr.strip().splitlines()[-1:]}")
        have = {wheel_key(p.name): p for p in cache.glob("*.whl")}
    absent = [f"{n}=={v}" for n, v in wanted.items() if (n, v) not in have]
    if absent:
        raise RuntimeError(f"no wheel in {cache} for {absent}")
    return [have[(n, v)] for n, v in wanted.items()]


def build_members(dest: Path, members: tuple[str, ...] = MEMBERS) -> list[Path]:
    """``uv build --wheel`` of each workspace member into ``dest``; returns the wheel paths.

    Raises:
        subprocess.CalledProcessError: a build failed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["uv", "build", "--wheel", "-q", "-o", tmp]
        builds = [subprocess.Popen([*cmd, "--package", m], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True) for m in members]
        for member, build in zip(members, builds):  # side by side: ~2x faster than one by one
            log = build.communicate()[0]
            if build.returncode:
                raise subprocess.CalledProcessError(build.returncode, [*cmd, member], log)
        out = []
        for wheel in sorted(Path(tmp).glob("*.whl")):
            out.append(Path(shutil.copy2(wheel, dest / wheel.name)))
    return out


def build(dest: Path, python_version: str = "3.12", cache: Path | None = None) -> dict[str, object]:
    """Fill ``dest`` (emptied of wheels first) with the project's wheels and the third-party ones
    the device lacks; returns ``{"python": ..., "third_party": {name: version}, "members": [...],
    "bytes": total}``."""
    if not re.fullmatch(r"3\.\d+", python_version):
        raise ValueError(f"python_version must look like 3.12, got {python_version!r}")
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    cache = cache or Path(os.environ.get("AGENTWORLD_CACHE", Path.home() / ".cache" / "agentworld"))
    carry = to_carry(closure(python_version), device_packages())
    tagged = cache / "gpu-wheels" / f"cp{python_version.replace('.', '')}-manylinux-x86_64"
    for wheel in download(carry, tagged, python_version):
        shutil.copy2(wheel, dest / wheel.name)
    members = build_members(dest)
    return {"python": python_version, "third_party": carry,
            "members": [m.name for m in members],
            "bytes": sum(p.stat().st_size for p in dest.glob("*.whl"))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--python-version", default="3.12",
                        help="the target interpreter's X.Y (the device's python3 is 3.12)")
    args = parser.parse_args(argv)
    info = build(args.dest, args.python_version)
    print(f"{len(info['third_party'])} third-party + {len(info['members'])} project wheels, "
          f"{info['bytes'] / 2**20:.1f} MiB -> {args.dest}", file=sys.stderr)


if __name__ == "__main__":
    main()
