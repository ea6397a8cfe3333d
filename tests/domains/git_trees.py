"""A git repository made from a dict of files, for the swe domain's user-repository tests."""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> text) under ``root``, ``git init`` it and commit them all
    in one commit; returns ``root``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git = ["git", "-c", "user.name=a", "-c", "user.email=a@b.invalid", "-C", str(root)]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return root
