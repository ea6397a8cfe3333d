"""Low items of issue 43 in the spirit of "data never executes": a NaN (or infinite) reward is
refused at read time with one line naming the file and line, whatever the format; a cache
directory owned by another user, or one that group or others may write, is refused rather than
used as it is (a planted base model or index would be loaded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentworld.core.cache import cache_dir, private_dir
from agentworld.core.types import Action, Episode, Observation, Step

CLI = [sys.executable, "-c", "from agentworld.app.cli import main; main()"]


def episode(reward: float = 1.0) -> Episode:
    return Episode(id="e", domain="terminal", system_prompt="s",
                   initial_observation=Observation(text="$ "),
                   steps=[Step(action=Action(text="ls"), observation=Observation(text="a\n$ "),
                               reward=reward)])


def convert(source: Path, target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "convert", str(source), str(target), *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_convert_refuses_a_non_finite_reward_naming_the_line(tmp_path: Path, bad: str) -> None:
    good = episode().model_dump_json()
    hostile = good.replace('"reward":1.0', f'"reward":{bad}')
    assert hostile != good
    (tmp_path / "episodes.jsonl").write_text(f"{good}\n{hostile}\n")
    got = convert(tmp_path / "episodes.jsonl", tmp_path / "out.jsonl", "--to", "agentworldbench")
    assert got.returncode != 0 and not (tmp_path / "out.jsonl").exists()
    message = [line for line in (got.stdout + got.stderr).splitlines() if "line 2" in line]
    assert len(message) == 1 and "reward" in message[0] and "finite number" in message[0], got
    assert "Traceback" not in got.stderr


def test_every_row_format_refuses_a_nan_reward(tmp_path: Path) -> None:
    from agentworld.core import dataformats as df
    from agentworld.core.io import DatasetError

    ok = tmp_path / "ok.jsonl"
    ok.write_text(episode().model_dump_json() + "\n")
    for to in ("agentworldbench", "messages"):
        out = tmp_path / f"{to}.jsonl"
        df.write_as(str(out), [episode()], to)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        if to == "messages":
            rows[0]["reward"] = float("nan")
        else:
            rows[-1]["agentworld"]["rewards"] = [float("nan")]
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))  # json writes NaN as NaN
        with pytest.raises(DatasetError, match=rf"{out.name}, line {len(rows)}: .*reward.*finite"):
            df.read_any_episodes(str(out))
    with pytest.raises(ValueError, match="finite number"):
        episode(float("nan"))


def test_cache_refuses_a_directory_others_may_write(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    assert cache_dir("search", root=root) == root / "search"
    (root / "search").chmod(0o777)
    with pytest.raises(OSError, match=r"cache directory .*search is writable by other users "
                                      r"\(mode 0777\); run chmod go-w"):
        cache_dir("search", root=root)
    (root / "search").chmod(0o755)
    assert cache_dir("search", root=root) == root / "search"  # readable is the user's choice
    root.chmod(0o770)
    with pytest.raises(OSError, match="writable by other users"):
        cache_dir("search", root=root)  # the root is checked too, not only the leaf


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user owns needs root")
def test_cache_owned_by_another_user_is_refused_with_a_planted_base(tmp_path: Path) -> None:
    from agentworld.trainers.models.pretrained import PROVENANCE, ensure_base

    root = tmp_path / "cache"
    planted = root / "bases" / "smollm2"
    planted.mkdir(parents=True, mode=0o700)
    (planted / PROVENANCE).write_text("{}")
    for path in (root, root / "bases", planted):
        os.chown(path, 65534, 65534)  # nobody
    with pytest.raises(OSError, match=r"cache directory .*cache belongs to uid 65534, not to "
                                      r"this user \(uid 0\)"):
        ensure_base("smollm2", cache=root)
    with pytest.raises(OSError, match="belongs to uid 65534"):
        private_dir(root)
