"""Here-documents and multi-line actions from the task sampler and both policies, run in real
sandboxed bash: the ``heredoc`` task kind is solved by the scripted expert, the random policy
makes real multi-line transitions (outputs checked exactly), and here-document bodies are
data, not commands, for command families."""

from __future__ import annotations

import re

from agentworld.core.collect import run_episode
from agentworld.domains.terminal.consistency import command_words, without_heredoc_bodies
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.expert import ScriptedExpert
from agentworld.domains.terminal.random_policy import RandomPolicy
from agentworld.domains.terminal.tasks import TerminalTaskSampler
from sandboxes import needs_sandbox

_HEREDOC = re.compile(
    r"\A(?P<tool>[^<\n]*?) <<(?P<q>['\"\\]?)(?P<end>EOF|PY|END)['\"]?\n(?P<body>.*)\n(?P=end)\Z",
    re.DOTALL,
)


def test_heredoc_tasks_are_sampled_with_checkable_goals():
    tasks = TerminalTaskSampler(("heredoc",)).sample(12, seed=2)
    goals = [t.check["goal"] for t in tasks]
    assert {g["op"] for g in goals} == {"heredoc"}
    assert any("path" not in g for g in goals)  # python3 - <<EOF programs
    assert any(g.get("var") for g in goals) and any("path" in g and not g["var"] for g in goals)
    for task in tasks:
        if "path" in task.check["goal"]:
            assert task.check["goal"]["path"] not in task.setup["files"]


@needs_sandbox
def test_scripted_expert_solves_heredoc_tasks_with_multi_line_actions():
    domain, expert, env = TerminalDomain(), ScriptedExpert(), TerminalEnv()
    multi = []
    try:
        for i, task in enumerate(TerminalTaskSampler(("heredoc",)).sample(9, seed=5)):
            episode = run_episode(domain, env, task, expert, seed=i, max_steps=12)
            assert episode.steps[-1].reward == 1.0, [
                (s.action.text, s.observation.text) for s in episode.steps
            ]
            multi += [s for s in episode.steps if "\n" in s.action.text]
            if "path" in task.check["goal"]:  # the file holds exactly the lines asked for
                want = "".join(x + "\n" for x in task.check["goal"]["lines"])
                assert task.check["files"][task.check["goal"]["path"]] == {"equals": want}
    finally:
        env.close()
    assert len(multi) >= 9 and all("<<" in s.action.text for s in multi)
    for step in multi:
        out = domain.output_text(step.observation)
        assert "^C" not in out and "> " not in out, (step.action.text, out)
        if step.action.text.startswith("python3 - <<"):
            n = int(re.search(r"range\(1, (\d+)", step.action.text).group(1))
            n = n - 1 if "+ 1" not in step.action.text else n
            assert out == "".join(f"{i * i}\n" for i in range(1, n + 1)), out


def _expected(tool: str, body: str) -> str | None:
    """The exact output of a here-document without expansions fed to ``tool``."""
    lines = body.split("\n")
    if tool == "wc -l":
        return f"{len(lines)}\n"
    if tool == "sort":
        return "".join(x + "\n" for x in sorted(lines))
    if tool == "tr a-z A-Z":
        return body.upper() + "\n"
    if tool == "grep -c a":
        return f"{sum('a' in x for x in lines)}\n"
    if tool == "awk '{s += $2} END {print s}'":
        return f"{sum(int(x.split()[1]) for x in lines)}\n"
    if tool == "cat":
        return body + "\n"
    return None


@needs_sandbox
def test_random_policy_makes_real_multi_line_transitions():
    domain, policy, env = TerminalDomain(), RandomPolicy(), TerminalEnv()
    try:
        tasks = TerminalTaskSampler().sample(40, seed=8)
        episodes = [run_episode(domain, env, t, policy, seed=i, max_steps=12)
                    for i, t in enumerate(tasks)]
    finally:
        env.close()
    multi = exact = read_back = 0
    kinds: set[str] = set()
    for episode in episodes:
        written: dict[str, str] = {}  # files written verbatim by a here-document
        made: set[str] = set()  # files written by a here-document
        for step in episode.steps:
            cmd, out = step.action.text, domain.output_text(step.observation)
            name = cmd[4:] if re.fullmatch(r"cat \S+", cmd) else None
            if name in written:
                assert out == written[name], (cmd, out)  # read back in a later step
            elif any(w in cmd for w in ("cd ", "mv ", "rm ", ">")):
                written.clear()  # the names may mean other files now
            names = any(re.search(rf"\b{re.escape(n)}\b", cmd) for n in made)
            if "\n" not in cmd and out and names:
                read_back += 1  # reads a file a multi-line step of this episode wrote
            if "\n" not in cmd:
                continue
            multi += 1
            assert "^C" not in out and "timed out" not in out, (cmd, out)
            kinds.add(cmd.split()[0])
            match = _HEREDOC.match(cmd)
            verbatim = match and (match["q"] or not re.search(r"[$`\\]", match["body"]))
            if verbatim and _expected(match["tool"], match["body"]) is not None:
                assert out == _expected(match["tool"], match["body"]), (cmd, out)
                exact += 1
            wrote = re.match(r"cat > (\S+) <<(['\"\\]?)EOF\n(.*?)\nEOF(?:\n|\Z)", cmd, re.DOTALL)
            made.update(re.findall(r"^cat >>? (\S+) <<", cmd, re.MULTILINE))
            if wrote and (wrote[2] or not re.search(r"[$`\\]", wrote[3])):
                written[wrote[1]] = wrote[3] + "\n"
            if cmd.startswith("python3 - <<"):
                assert out or (step.observation.state or {}).get("exit_code"), cmd
    assert multi >= 10 and exact >= 3 and read_back >= 1, (multi, exact, read_back)
    assert {"cat", "python3"} <= kinds and kinds & {"for", "if", "while", "i=", "total=0"}, kinds


def test_heredoc_bodies_are_data_not_commands():
    text = "cat > a.txt <<'EOF'\nupdate kettle\nls -l\nEOF\nwc -l a.txt"
    assert command_words(text) == {"cat", "wc"}
    assert command_words("python3 - <<PY\nfor i in range(3):\n    print(i)\nPY") == {"python3"}
    assert command_words("cat <<-EOF\n\tls\n\tEOF\nsort <<<'x'") == {"cat", "sort"}
    assert command_words('echo "<<EOF"\nls') == {"echo", "ls"}
    assert without_heredoc_bodies("a <<A <<\\B\n1\nA\n2\nB\nz") == "a <<A <<\\B\nz"
    assert without_heredoc_bodies("cat <<EOF\nnever closed") == "cat <<EOF"
