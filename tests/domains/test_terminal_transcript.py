"""The terminal's transcript verifier (a reward source for agents trained in a simulator)
against the real environment's own task checks, on real episodes."""

from __future__ import annotations

from agentworld.core.collect import collect
from agentworld.core.domain_base import domain_hooks
from agentworld.core.protocols import TranscriptRewardingDomain
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.fs import FILE_CONDITIONS
from agentworld.domains.terminal.tasks import TerminalTaskSampler
from sandboxes import needs_sandbox

OUTPUT_KINDS = ("inspect", "navigate", "count")


class _Kinds(TerminalDomain):
    def __init__(self, kinds: tuple[str, ...]) -> None:
        super().__init__()
        self.kinds = kinds

    def tasks(self) -> TerminalTaskSampler:
        return TerminalTaskSampler(kinds=self.kinds)


@needs_sandbox
def test_the_transcript_verdict_is_the_real_outcome_on_output_checks() -> None:
    domain = _Kinds(OUTPUT_KINDS)
    assert isinstance(domain, TranscriptRewardingDomain)
    episodes = collect(domain, 12, policies={"scripted": 0.5, "random": 0.5}, seed=3, max_steps=3)
    outcomes = []
    for e in episodes:
        transcript = [(s.action.text, s.observation.text) for s in e.steps]
        real = any(s.reward > 0 for s in e.steps)
        assert domain_hooks(domain).verify_transcript(e.task, transcript) == (
            (1.0, True) if real else (0.0, False)
        ), (e.task.instruction, transcript)
        outcomes.append(real)
    assert 0 < sum(outcomes) < len(outcomes)  # both outcomes were checked


@needs_sandbox
def test_checks_on_the_file_tree_are_left_undecided() -> None:
    domain = _Kinds(("create", "delete"))
    episodes = collect(domain, 4, policies={"scripted": 1.0}, seed=0, max_steps=8)
    for e in episodes:
        assert e.task is not None and set(e.task.check) & set(FILE_CONDITIONS)
        assert any(s.reward > 0 for s in e.steps)  # the expert solved it for real
        transcript = [(s.action.text, s.observation.text) for s in e.steps]
        assert domain.verify_transcript(e.task, transcript) is None
    assert domain.verify_transcript(episodes[0].task, []) is None
