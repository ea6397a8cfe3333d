"""Rationales that restate the earlier command lines which wrote what a command reads (no sandbox)."""

from __future__ import annotations

from agentworld.core.formats import episode_messages
from agentworld.core.rationales import domain_rationales, message_history
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.terminal.episode_writes import written_paths
from agentworld.domains.terminal.explain import explain_text
from agentworld.domains.terminal.prompt import HOME, render_prompt

STEPS = [  # (command line, output, directory after it, relative to HOME)
    ("echo hello > greet.txt", "", ""),
    ("x=7", "", ""),
    ("y=5; mkdir docs", "", ""),
    ("cd docs", "", "docs"),
    ("printf 'b\\na\\n' >> ../list.txt", "", "docs"),
    ("cat ../greet.txt", "hello\n", "docs"),
    ("echo $((x * y))", "35\n", "docs"),
    ("ls ..", "docs  greet.txt  list.txt\n", "docs"),
    ("sort ../list.txt", "a\nb\n", "docs"),
    ("cat ../notes.md", "old\n", "docs"),
]


def episode() -> Episode:
    steps = []
    for action, output, cwd in STEPS:
        where = f"{HOME}/{cwd}".rstrip("/")
        steps.append(Step(action=Action(text=action),
                          observation=Observation(text=output + render_prompt(where, 0),
                                                  state={"cwd": where})))
    return Episode(domain="terminal", system_prompt="S",
                   initial_observation=Observation(text=render_prompt(HOME, 0), state={"cwd": HOME}),
                   steps=steps)


def test_rationale_restates_the_writers_of_what_a_command_reads():
    why = domain_rationales([episode()])[0]
    assert why[:3] == ["cwd ~", "cwd ~", "cwd ~"]  # nothing the episode wrote is read yet
    assert why[3] == "cd ~/docs\n$ y=5; mkdir docs"  # a directory the episode made
    assert why[4] == "cwd ~/docs"
    assert why[5] == "cat ~/greet.txt\n$ echo hello > greet.txt"
    assert why[6] == "cwd ~/docs\n$ x=7\n$ y=5; mkdir docs"
    assert why[7] == ("ls ~\n$ echo hello > greet.txt\n$ y=5; mkdir docs\n"
                      "$ printf 'b\\na\\n' >> ../list.txt")
    assert why[8] == "cat ~/list.txt\n$ printf 'b\\na\\n' >> ../list.txt"
    assert why[9] == "cat ~/notes.md"  # a file of the initial state the episode did not touch


def test_simulator_writes_the_same_rationale_from_the_chat_text():
    ep = episode()
    why = domain_rationales([ep])[0]
    messages = episode_messages(ep)
    for t, step in enumerate(ep.steps):
        before = [ep.initial_observation, *(s.observation for s in ep.steps)][t].text
        prefix = messages[: 2 + 2 * t]  # system, (user, assistant) * t, user
        assert explain_text(step.action.text, before, history=message_history(prefix)) == why[t]


def test_written_paths_reads_redirections_and_file_commands():
    cwd = f"{HOME}/a"
    assert written_paths("sort x > out.txt 2>/dev/null", cwd) == {f"{HOME}/a/out.txt"}
    assert written_paths("cp a.txt ../b.txt && rm -f c", cwd) == {f"{HOME}/b.txt", f"{HOME}/a/c"}
    assert written_paths("mv old new", cwd) == {f"{HOME}/a/old", f"{HOME}/a/new"}
    assert written_paths("echo 'a > b' | tee -a log", cwd) == {f"{HOME}/a/log"}
    assert written_paths("sed -i 's/a/b/' f.txt", cwd) == {f"{HOME}/a/f.txt"}
    assert written_paths("cat <<EOF > ~/n.txt", cwd) == {f"{HOME}/n.txt"}
    assert written_paths("grep x f.txt 2>&1", cwd) == set()
