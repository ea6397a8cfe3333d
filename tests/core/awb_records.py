"""AgentWorldBench rows written to the public data card (QwenLM/Qwen-AgentWorld README "Data
Format"), in all seven domains, for the format and bench tests."""

from __future__ import annotations

import json
from pathlib import Path

ACTIONS = {
    "mcp": '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
    "search": 'search(query="capybara habitat")',
    "terminal": "ls -la /home/user\n",
    "swe": "str_replace_editor view /repo/src/app.py",
    "android": "click(element_id=12)",
    "web": "click [42]",
    "os": "pyautogui.click(100, 200)",
}
OBSERVATIONS = {
    "mcp": '{"temperature": 21, "unit": "C"}',
    "search": "1. Capybara - Wikipedia\nThe capybara lives in savannas\u2028and dense forests.",
    "terminal": "root@host:/home/user# ls -la\ntotal 8\n-rw-r--r-- 1 root root 0 notes.txt\n"
    "root@host:/home/user# ",
    "swe": "1\timport os\n2\tprint(os.getcwd())",
    "android": "[0] FrameLayout\n  [12] Button 'Search' clickable\n  [13] EditText ''",
    "web": "RootWebArea 'Shop'\n  [42] link 'Cart (1)'\n  [43] button 'Checkout'",
    "os": "window 'Files'\n  [7] list 'Documents'\n  [8] button 'Open'",
}
SYSTEM = "# Role and Objective\n\nYou are a **{Domain} World Model** for trajectory {id}."


def card_rows(domain: str, traj_id: int, turns: int, layout: str = "full",
              task: str | None = None) -> list[dict]:
    """One row per turn of a trajectory of ``turns`` turns, as the card writes them."""
    prompts = [f"### Turn {k}\n**Action:**\n{ACTIONS[domain]} #{k}" for k in range(1, turns + 1)]
    responses = [f"**Environment Observation:**\n{OBSERVATIONS[domain]} ({k})"
                 for k in range(1, turns + 1)]
    rows = []
    for k in range(1, turns + 1):
        end = turns if layout == "full" else k
        rows.append({
            "task": task or domain, "id": traj_id, "prompt": prompts[:end], "response": responses[:end],
            "current_prompt": prompts[k - 1],
            "system_str": SYSTEM.format(Domain=domain.capitalize(), id=traj_id),
            "turn_idx": k, "total_turns": turns,
        })
    return rows


def write_rows(path: Path, rows: list[dict]) -> Path:
    """One JSON object per line, non-ASCII (U+2028 included) written raw as the public files do."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def public_messages(job: dict) -> list[dict]:
    """The world-model request ``eval.py infer`` builds for a row (after PR #8): the system_str,
    then ``prompt``/``response`` pairs before ``turn_idx``, then ``prompt[turn_idx - 1]``."""
    turn = job["turn_idx"] - 1
    messages = [{"role": "system", "content": job["system_str"]}] if job["system_str"] else []
    for p, r in zip(job["prompt"][:turn], job["response"][:turn]):
        messages += [{"role": "user", "content": p}, {"role": "assistant", "content": r}]
    return [*messages, {"role": "user", "content": job["prompt"][turn]}]


def public_load(directory: Path) -> list[dict]:
    """``eval.py``'s ``load_data``: ``*_test.jsonl`` sorted, text-mode lines, stripped."""
    jobs = []
    for file in sorted(directory.glob("*_test.jsonl")):
        with open(file) as f:
            jobs += [json.loads(line.strip()) for line in f if line.strip()]
    return jobs
