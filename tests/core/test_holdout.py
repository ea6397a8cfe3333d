"""Out-of-distribution hold-out: held-out task and command families never reach a training
split (real terminal collection through the pipeline's collect stage)."""

from __future__ import annotations

import pytest
from agentworld.app.config import CollectConfig
from agentworld.core.holdout import action_families, split_out_of_distribution
from agentworld.core.io import read_episodes
from agentworld.app.pipeline import RunState, run_collect
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.terminal.domain import TerminalDomain
from rich.console import Console
from sandboxes import needs_sandbox


def _episode(kind: str, actions: list[str]) -> Episode:
    return Episode(
        domain="terminal", system_prompt="s", initial_observation=Observation(text="$ "),
        task=Task(id=kind, domain="terminal", instruction="i", kind=kind),
        steps=[Step(action=Action(text=a), observation=Observation(text="$ ")) for a in actions],
    )


def test_split_by_task_kind_and_command_family():
    domain = TerminalDomain()
    episodes = [
        _episode("count", ["ls", "wc -l a.txt"]),
        _episode("status", ["grep -q a f; echo $?"]),            # held-out task kind
        _episode("inspect", ["cat a", "seq 3 | paste -sd+"]),     # held-out command, 2nd step
        _episode("inspect", ["echo 'seq | paste'"]),              # only quoted text
    ]
    inside, outside = split_out_of_distribution(episodes, ["status"], ["paste"], domain)
    assert [e.task.kind for e in inside] == ["count", "inspect"]
    assert [e.id for e in outside] == [episodes[1].id, episodes[2].id]
    assert action_families(Action(text="ls -l"), None) == set()
    assert action_families(Action(text="ls -l"), _Typed()) == {"typed:ls -l"}


class _Typed:
    """A structural domain without ``command_families``: its ``action_type`` is the family."""

    name, version = "typed", "0"

    def action_type(self, action: Action) -> str:
        return f"typed:{action.text}"


@needs_sandbox
def test_held_out_families_never_reach_a_training_split(tmp_path):
    domain = TerminalDomain()
    cfg = CollectConfig(episodes=34, workers=2, ood_task_kinds=["status", "loop"],
                        ood_commands=["seq", "python3"])
    state = RunState(dir=str(tmp_path), seed=3, domain="terminal")
    run_collect(cfg, state, Console(quiet=True))
    train, heldout = read_episodes(state.train_url), read_episodes(state.heldout_url)
    ood = read_episodes(state.ood_url)
    assert len(train) + len(heldout) + len(ood) == 34 and ood and train and heldout
    for episode in train + heldout:
        assert episode.task.kind not in {"status", "loop"}
        for step in episode.steps:
            assert not domain.command_families(step.action) & {"seq", "python3"}, step.action
    kinds = {e.task.kind for e in ood}
    assert {"status", "loop"} <= kinds
    assert state.facts["collect"]["ood_episodes"] == len(ood)


def test_unknown_held_out_task_kind_is_refused(tmp_path):
    state = RunState(dir=str(tmp_path), seed=0, domain="terminal")
    with pytest.raises(ValueError, match=r"ood_task_kinds \['stauts'\].*valid: create"):
        run_collect(CollectConfig(episodes=2, ood_task_kinds=["stauts"]), state, Console(quiet=True))
