"""Extract the terminal domain's real corpus: command lines from manuals, file excerpts from
installed packages (``agentworld.domains.terminal`` ``data/real/``).

    uv run python scripts/extract_real_corpus.py            # rewrites data/real/*.json
    uv run python scripts/extract_real_corpus.py --check    # counts only, writes nothing

Sources no one here wrote, as a Debian 12 system installs them (the CI image's packages; what is
missing is skipped and counted):

* command lines from the GNU info manuals in ``/usr/share/info`` (coreutils, sed, grep, find,
  diffutils, gzip, bc): lines shown with a ``$ `` prompt, or example lines that start with the
  manual's own program; and from the EXAMPLES section of man pages (``man -P cat``) of the
  programs in :data:`PROGRAMS`;
* file excerpts (at most :data:`MAX_LINES` lines): configuration files of ``/etc``, package logs
  of ``/var/log``, CSV data sets shipped with scikit-learn, JSON files shipped with Python
  packages, and Python and shell source files (the standard library, ``/usr/bin`` scripts).

Each command line is kept only when it runs in the sandbox against an episode tree (adapted by
:func:`agentworld.domains.terminal.real_paths.adapt`) without timing out and without ``command
not found``: commands that wait for input, read the clock or the host, or need the network are
dropped. Every entry records its source (``info:sed``, ``man:awk``, the file's path) and, for
files, the Debian package or Python distribution and its license.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shlex
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

from agentworld.core.types import Task
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.real_paths import adapt
from agentworld.domains.terminal.real_policy import DATA_DIR, home_tree

INFO = {"coreutils": None, "sed": {"sed"}, "grep": {"grep"}, "find": {"find", "xargs"},
        "diffutils": {"diff", "cmp", "diff3", "sdiff"}, "gzip": {"gzip", "gunzip", "zcat"},
        "bc": {"bc"}}
COREUTILS = set("""cat tac nl od base64 base32 fmt pr fold head tail split csplit wc sum cksum
md5sum sha1sum sha256sum sort uniq comm ptx tsort cut paste join tr expand unexpand ls dir cp dd
mv rm link ln mkdir rmdir unlink chmod touch stat truncate echo printf false true test expr tee
basename dirname pathchk realpath pwd printenv env seq factor numfmt readlink""".split())
PROGRAMS = COREUTILS | {"sed", "grep", "egrep", "fgrep", "find", "xargs", "diff", "cmp", "gzip",
                        "gunzip", "zcat", "bc", "awk", "mawk", "column", "tar", "jq", "python3",
                        "rev", "bzip2", "xxd", "tac", "join"}
MAN_PAGES = sorted(PROGRAMS - {"false", "true", "pwd", "link", "unlink", "dir"})
MAX_LINES = 8
FILES = {  # source path -> directory in the episode tree
    "/etc/adduser.conf": "etc", "/etc/deluser.conf": "etc", "/etc/nsswitch.conf": "etc",
    "/etc/host.conf": "etc", "/etc/gai.conf": "etc", "/etc/mke2fs.conf": "etc",
    "/etc/sysctl.conf": "etc", "/etc/debconf.conf": "etc", "/etc/ucf.conf": "etc",
    "/etc/xattr.conf": "etc", "/etc/e2scrub.conf": "etc", "/etc/inputrc": "etc",
    "/etc/profile": "etc", "/etc/bash.bashrc": "etc", "/etc/services": "etc",
    "/etc/protocols": "etc", "/etc/mime.types": "etc", "/etc/pam.conf": "etc",
    "/etc/ca-certificates.conf": "etc", "/etc/skel/.bashrc": "etc",
    "/var/log/dpkg.log": "logs", "/var/log/apt/history.log": "logs",
    "/var/log/alternatives.log": "logs",
    "/usr/bin/zgrep": "bin", "/usr/bin/zdiff": "bin", "/usr/bin/which": "bin",
    "/usr/bin/gettext.sh": "bin", "/usr/bin/zless": "bin",
}
PACKAGE_FILES = {  # (distribution, file inside it) -> directory in the episode tree
    ("scikit-learn", "sklearn/datasets/data/iris.csv"): "data",
    ("scikit-learn", "sklearn/datasets/data/wine_data.csv"): "data",
    ("scikit-learn", "sklearn/datasets/data/linnerud_exercise.csv"): "data",
    ("scikit-learn", "sklearn/datasets/data/linnerud_physiological.csv"): "data",
    ("numpy", "numpy/random/tests/data/mt19937-testset-1.csv"): "data",
    ("playwright", "playwright/driver/package/package.json"): "data",
    ("playwright", "playwright/driver/package/browsers.json"): "data",
    ("jsonschema-specifications", "jsonschema_specifications/schemas/draft7/metaschema.json"): "data",
}
STDLIB = ["textwrap.py", "shlex.py", "glob.py", "fnmatch.py", "bisect.py", "colorsys.py",
          "keyword.py", "csv.py", "getopt.py", "this.py"]


def info_commands(manual: str, programs: set[str] | None) -> list[str]:
    """Example command lines of ``/usr/share/info/MANUAL.info*.gz``."""
    text = ""
    for path in sorted(Path("/usr/share/info").glob(f"{manual}.info*.gz")):
        text += gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
    programs = programs or COREUTILS
    out = []
    for line in text.splitlines():
        m = re.match(r"^ {5,}\$ (.+)$", line)
        if m:
            out.append(m.group(1).strip())
        elif re.match(r"^ {5,}\S", line) and line.split()[0] in programs:
            out.append(line.strip())
    return out


def man_commands(page: str) -> list[str]:
    """Example command lines of the EXAMPLES section of ``man 1 PAGE``."""
    try:
        text = subprocess.run(["man", "-P", "cat", "1", page], capture_output=True, text=True,
                              timeout=30, env={**os.environ, "MANWIDTH": "200"}).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    out, inside = [], False
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Z ]+$", line):
            inside = line.strip() in ("EXAMPLES", "EXAMPLE")
            continue
        if not inside:
            continue
        stripped = re.sub(r"^[$%#] ", "", line.strip())
        if stripped and stripped.split()[0] in PROGRAMS:
            out.append(stripped)
    return out


def plausible(line: str) -> bool:
    """A whole, runnable command line: known program, balanced quotes, no metavariables."""
    if len(line) > 200 or line.endswith(("\\", "|", ".", ",", ":")) or "..." in line:
        return False
    if ".  " in line or "     " in line or " $ " in line:  # prose, or examples side by side
        return False
    if "\t" in line or not line.isascii():
        return False
    try:
        parts = shlex.split(line)
    except ValueError:
        return False
    if not parts or parts[0] not in PROGRAMS:
        return False
    metavars = [w for w in parts[1:] if re.fullmatch(r"[A-Z][A-Z_]{2,}", w)]
    return not metavars and not re.search(r"\[[A-Z]", line)


def license_of_package(path: str) -> tuple[str, str]:
    """(Debian package, license) of an installed file; ('', '') when dpkg does not know it."""
    pkg = ""
    for name in (path, re.sub(r"^/usr/bin/", "/bin/", path)):  # merged /usr: dpkg knows /bin
        try:
            pkg = pkg or subprocess.run(["dpkg", "-S", name], capture_output=True, text=True,
                                        timeout=30).stdout.split(":")[0].strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    if not pkg:
        return "", "none: written by an install script or a package manager; no package ships it"
    copyright = Path(f"/usr/share/doc/{pkg}/copyright")
    text = copyright.read_text(errors="replace") if copyright.is_file() else ""
    m = re.search(r"^License: *(\S.*)$", text, re.M)
    return pkg, m.group(1).strip() if m else f"see /usr/share/doc/{pkg}/copyright"


def excerpt(text: str, path: str) -> str | None:
    """At most MAX_LINES lines of ``text``, starting at a definition for Python source; None
    when the excerpt has lines over 100 characters or is nearly empty."""
    lines = text.splitlines()
    start = 0
    if path.endswith(".py"):
        start = next((i for i, l in enumerate(lines) if l.startswith(("def ", "class "))), 0)
    chosen = lines[start:start + MAX_LINES]
    while chosen and not chosen[-1].strip():
        chosen.pop()
    if len(chosen) < 3 or any(len(l) > 100 for l in chosen):
        return None
    return "\n".join(chosen) + "\n"


def collect_files() -> list[dict]:
    out = []
    for path, where in FILES.items():
        p = Path(path)
        if not p.is_file():
            continue
        text = excerpt(p.read_text(errors="replace"), path)
        pkg, lic = license_of_package(path)
        if text:
            out.append({"name": f"{where}/{p.name.lstrip('.') or p.name}", "text": text,
                        "source": path, "package": pkg, "license": lic})
    for (dist, rel), where in PACKAGE_FILES.items():
        try:
            d = metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            continue
        p = Path(str(d.locate_file(rel)))
        text = excerpt(p.read_text(errors="replace"), rel) if p.is_file() else None
        if text:
            out.append({"name": f"{where}/{p.name}", "text": text, "source": f"{dist}: {rel}",
                        "package": f"{dist} {d.version}", "license": d.metadata.get("License-Expression") or d.metadata.get("License", "")[:60]})
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in STDLIB:
        p = stdlib / name
        text = excerpt(p.read_text(errors="replace"), name) if p.is_file() else None
        if text:
            out.append({"name": f"src/{name}", "text": text, "source": f"CPython {sys.version.split()[0]} Lib/{name}",
                        "package": "cpython", "license": "PSF-2.0"})
    names = [f["name"] for f in out]
    assert len(names) == len(set(names)), names
    return out


def collect_commands() -> list[dict]:
    out, seen = [], set()
    sources = [(f"info:{m}", info_commands(m, p)) for m, p in INFO.items()]
    sources += [(f"man:{p}", man_commands(p)) for p in MAN_PAGES]
    for source, lines in sources:
        for line in lines:
            if plausible(line) and line not in seen:
                seen.add(line)
                out.append({"source": source, "command": line})
    return out


def runs(commands: list[dict], files: list[dict]) -> list[dict]:
    """The commands that run in the sandbox, adapted to a sample tree, in under 3 s and found."""
    env, kept, rng = TerminalEnv(), [], random.Random(0)
    try:
        for i, entry in enumerate(commands):
            setup, paths, dirs = home_tree(files, rng)
            env.reset(options={"task": Task(id="x", domain="terminal", instruction="",
                                            setup=setup)})
            line = adapt(entry["command"], paths, dirs, rng, {})
            _, _, _, _, info = env.step(line)
            code = info.get("exit_code")
            if not info.get("timed_out") and code not in (126, 127):
                kept.append(entry)
            if (i + 1) % 100 == 0:
                print(f"{i + 1}/{len(commands)} run, {len(kept)} kept", file=sys.stderr)
    finally:
        env.close()
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="print counts, write nothing")
    args = parser.parse_args()
    files = collect_files()
    commands = runs(collect_commands(), files)
    by_source: dict[str, int] = {}
    for c in commands:
        by_source[c["source"]] = by_source.get(c["source"], 0) + 1
    print(json.dumps({"files": len(files), "commands": len(commands), "by_source": by_source},
                     indent=1))
    if args.check:
        return
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for name, data in (("files.json", files), ("commands.json", commands)):
        tmp = DATA_DIR / f".{name}.tmp"
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(DATA_DIR / name)


if __name__ == "__main__":
    main()
