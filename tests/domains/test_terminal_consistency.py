"""Command families and the in-episode consistency subset of the terminal domain, on an episode
built by hand, then through the evaluation and its report."""

from __future__ import annotations

from agentworld.core import plugins
from agentworld.core.evaluate import OUT_OF_DISTRIBUTION, evaluate, transitions
from agentworld.app.report import render_markdown
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.terminal.consistency import command_words
from agentworld.domains.terminal.domain import TerminalDomain

HOME = "/home/agent"
SETUP = {"a.txt": "5B 1111111111", "src": "<dir>", "src/app": "<dir>",
         "src/app/main.py": "20B 2222222222"}


def _episode(steps: list[tuple[str, str, int, dict[str, str]]], eid: str = "hand") -> Episode:
    """Steps of (action, output, exit status, file snapshot after the step), cwd ~."""

    def obs(output: str, code: int, files: dict[str, str]) -> Observation:
        prompt = ("" if code == 0 else f"[{code}] ") + "user@sandbox:~$ "
        return Observation(text=output + prompt,
                           state={"cwd": HOME, "exit_code": code, "files": dict(files)})

    return Episode(
        id=eid, domain="terminal", system_prompt="terminal",
        initial_observation=obs("", 0, SETUP),
        steps=[Step(action=Action(text=a), observation=obs(o, c, f)) for a, o, c, f in steps],
        metadata={"policy": "hand"},
    )


GREET = SETUP | {"greet.txt": "6B 3333333333"}
NO_MAIN = {k: v for k, v in GREET.items() if k != "src/app/main.py"}
STEPS = [
    ("x=7", "", 0, SETUP),                                            # 0 writes a variable
    ("y=5", "", 0, SETUP),                                            # 1
    ("echo $((x * y))", "35\n", 0, SETUP),                            # 2 reads x, y
    ("echo hello > greet.txt", "", 0, GREET),                         # 3 writes a file
    ("cat greet.txt", "hello\n", 0, GREET),                           # 4 reads it
    ("cat a.txt", "seed\n", 0, GREET),                                # 5 set-up file only
    ("ls", "a.txt  greet.txt  src\n", 0, GREET),                      # 6 lists a changed dir
    ("echo '$x'", "$x\n", 0, GREET),                                  # 7 no expansion
    ("rm src/app/main.py", "", 0, NO_MAIN),                           # 8 silent success
    ("ls src/app", "", 0, NO_MAIN),                                   # 9 empty listing
    ("ls src", "app\n", 0, NO_MAIN),                                  # 10 src's entries same
    ("cat src/app/main.py", "cat: src/app/main.py: No such file or directory\n", 1, NO_MAIN),  # 11
    ("pwd", "/home/agent\n", 0, NO_MAIN),                             # 12
    ("find . -name '*.py'", "", 0, NO_MAIN),                          # 13 empty
    ("find src", "src\nsrc/app\n", 0, NO_MAIN),                       # 14 recursive lister
    ('echo "total: $x"', "total: 7\n", 0, NO_MAIN),                   # 15 reads x
]


def test_command_words():
    assert command_words("for i in $(seq 1 3); do echo \"a | sort\" > f$i; done") == {
        "for", "seq", "echo"}
    assert command_words("n=$(wc -l < f.txt); echo $n") == {"wc", "echo"}
    assert command_words("if [ -f x ]; then cat x; else echo no; fi") == {"if", "test", "cat", "echo"}
    assert command_words("seq 3 | paste -sd+ | bc && ./run.sh 2>&1") == {"seq", "paste", "bc", "run.sh"}
    assert command_words("x=7") == set()


def test_consistency_turns_of_a_hand_built_episode():
    assert TerminalDomain().consistency_turns(_episode(STEPS)) == {2, 4, 6, 11, 14, 15}


def test_evaluation_reports_consistency_and_splits_side_by_side():
    domain = TerminalDomain()
    inside = transitions([_episode(STEPS)], domain=domain)
    outside = transitions([_episode(STEPS[:5], eid="ood")], domain=domain,
                          split=OUT_OF_DISTRIBUTION)
    assert [t.turn for t in inside if t.consistency] == [2, 4, 6, 11, 14, 15]
    models = {name: plugins.get_sim_backend(name).load(None, domain=domain)
              for name in ("copy-previous", "empty")}
    result = evaluate(models, inside + outside, {"exact_match": plugins.get_reward("exact_match")},
                      domain=domain)
    assert result.num_transitions == len(STEPS) and result.num_consistency == 6 + 2
    assert result.splits[OUT_OF_DISTRIBUTION] == {"episodes": 1, "transitions": 5, "nonempty": 2,
                                                  "consistency": 2, "deterministic": 5,
                                                  "nondeterministic": 0}
    # the empty baseline is right exactly where the real output is empty (and exit status 0)
    empty_in = result.by_split["empty"]["in-distribution"]["exact_match"]
    assert empty_in.n == len(STEPS) and abs(empty_in.mean - 6 / 16) < 1e-9
    assert result.by_split_consistency["empty"][OUT_OF_DISTRIBUTION]["exact_match"].mean == 0.0
    assert result.consistency["empty"]["exact_match"].n == 8
    ood_types = result.by_split_action_type_nonempty["empty"][OUT_OF_DISTRIBUTION]
    assert set(ood_types) == {"echo", "cat"}
    text = render_markdown(result)
    assert "## In distribution vs out of distribution (exact_match)" in text
    assert "| out-of-distribution | in-episode consistency | 2 |" in text
