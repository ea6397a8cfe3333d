"""The ``judge`` reward source of decoupled RL (issue 34) over real HTTP: a chat-completions
endpoint on loopback (:mod:`loopback`, a real HTTP server in a thread) answers from a script;
the simulated episodes run on a real :class:`~agentworld.sim.SimEnv` of the mcp domain, their
real outcome comes from the real notes server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agentworld.core import plugins
from agentworld.core.formats import wrap_observation
from agentworld.core.types import Prediction, Task
from agentworld.domains.mcp.calls import parse_call, render_call
from agentworld.domains.mcp.tasks import McpTaskSampler
from agentworld.sim import SimEnv
from agentworld.trainers.agents.simrl.evaluate import gap_report
from agentworld.trainers.agents.simrl.judge import (
    JUDGE_PROMPT,
    JudgeUnavailableError,
    TranscriptJudge,
    parse_verdict,
)
from agentworld.trainers.agents.simrl.rewards import RewardedSimEnv, SimEpisode

sys.path.insert(0, str(Path(__file__).parents[1]))
from loopback import free_port, serve  # noqa: E402


class Flatterer:
    """A world model that reports every call a success (the call's arguments as the result,
    footer reward 1, terminated)."""

    rewards = True
    history_window = None

    def predict(self, requests, **_):
        out = []
        for messages in requests:
            parsed = parse_call(messages[-1]["content"])
            body = json.dumps({"ok": parsed[1] if not isinstance(parsed, str) else {}})
            out.append(Prediction(text=wrap_observation(body, reward=1.0, terminated=True),
                                  observation=body, reward=1.0, terminated=True))  # fmt: skip
        return out


@pytest.fixture(scope="module")
def lookup() -> Task:
    return McpTaskSampler(kinds=("lookup",), servers=("notes",)).sample(1, seed=1)[0]


def scripted(replies: list[str]):
    """A chat-completions route answering ``replies`` in order (500 for ``"HTTP 500"``)."""

    def route(path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        reply = replies.pop(0)
        if reply == "HTTP 500":
            return 500, "application/json", b'{"error": {"message": "the judge model crashed"}}'
        request = json.loads(body)
        answer = {"id": "c", "object": "chat.completion", "created": 0, "model": request["model"],
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                               "finish_reason": "stop"}]}  # fmt: skip
        return 200, "application/json", json.dumps(answer).encode()

    return route


def test_parse_verdict() -> None:
    assert parse_verdict("YES") is True and parse_verdict("no.") is False
    assert parse_verdict("<think>the note says seven, so yes</think>\n**Yes**, done") is True
    assert parse_verdict("No, the call failed. Yes it was tried.") is False
    for unclear in ("", "Maybe", "The task is complete: YES", "yesterday"):
        assert parse_verdict(unclear) is None


def test_judge_reads_task_and_transcript_over_http(lookup: Task) -> None:
    call = render_call("read_note", {"title": lookup.setup["params"]["title"]})
    shown = json.dumps({"body": lookup.check["all"][0]["answer"]})
    replies = ["YES", "NO - nothing was read", "I cannot see the note", "<think>ok</think> yes"]
    with serve(scripted(replies)) as (url, seen):
        judge = TranscriptJudge(f"{url}/v1", "judge-model", retries=0)
        assert judge.verdict(lookup, [(call, shown)]) == (1.0, True)
        assert judge.verdict(lookup, []) == (0.0, False)
        assert judge.verdict(lookup, [(call, shown)]) is None  # cannot tell
        assert judge.verdict(None, [(call, shown)]) == (1.0, True)
    assert (judge.stats.requests, judge.stats.yes, judge.stats.no, judge.stats.cannot_tell) == (4, 2, 1, 1)
    first = json.loads(seen[0]["body"])
    assert seen[0]["path"] == "/v1/chat/completions" and first["model"] == "judge-model"
    assert first["temperature"] == 0.0 and first["messages"][0] == {"role": "system", "content": JUDGE_PROMPT}
    user = first["messages"][1]["content"]
    assert user.startswith(f"Task: {lookup.instruction}\n")
    assert f"Call 1: {call}\nResponse 1: {shown}\n" in user
    assert "(no call was made)" in json.loads(seen[1]["body"])["messages"][1]["content"]
    assert seen[0]["headers"]["authorization"] == "Bearer EMPTY"  # no key was configured for this URL


def test_judge_endpoint_failures_are_one_line_errors(lookup: Task, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    judge = TranscriptJudge(dead, "judge-model", retries=0, timeout_s=5)
    with pytest.raises(JudgeUnavailableError, match=r"the judge endpoint http://127\.0\.0\.1:\d+/v1 "
                       r"\(model 'judge-model'\) cannot be reached") as caught:  # fmt: skip
        judge.verdict(lookup, [])
    assert "\n" not in str(caught.value)
    with serve(scripted(["HTTP 500"])) as (url, _):
        with pytest.raises(JudgeUnavailableError, match="answered HTTP 500") as caught:
            TranscriptJudge(f"{url}/v1", "judge-model", retries=0).verdict(lookup, [])
    assert "\n" not in str(caught.value)
    for name in ("AGENTWORLD_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="has no endpoint"):
        TranscriptJudge(None, "m")


def test_judge_source_rewards_simulated_episodes_and_is_scored_by_replay(lookup: Task) -> None:
    mcp = plugins.get_domain("mcp")
    wrong = render_call("read_note", {"title": "no-such-note"})
    right = render_call("read_note", {"title": lookup.setup["params"]["title"]})
    finished: list[SimEpisode] = []
    # per step: the judge says NO to the wrong read, YES to the right one; then a wrong read
    # the judge cannot tell about, and a wrong read it wrongly calls a success
    replies = ["no", "yes", "hmm", "Yes."]
    with serve(scripted(replies)) as (url, seen):
        judge = TranscriptJudge(f"{url}/v1", "judge-model", retries=0)
        env = RewardedSimEnv(SimEnv(Flatterer(), domain=mcp, reward_source="none", max_steps=3),
                             mcp, "judge", on_episode=finished.append, judge=judge)  # fmt: skip
        steps = []
        for actions in ([wrong, right], [wrong], [wrong]):
            env.reset(options={"task": lookup})
            for action in actions:
                steps.append(env.step(action))
            if not (steps[-1][2] or steps[-1][3]):
                env.reset(options={"task": lookup})  # reports the unfinished episode
        env.close()
    assert [(s[1], s[2]) for s in steps] == [(0.0, False), (1.0, True), (0.0, False), (1.0, True)]
    assert [s[4]["verdicts"]["judge"] for s in steps] == [(0.0, False), (1.0, True), None, (1.0, True)]
    assert steps[0][4]["verdicts"]["footer"] == (1.0, True)  # the flatterer's, not chosen
    assert len(seen) == 4 and f"Call 2: {right}" in json.loads(seen[1]["body"])["messages"][1]["content"]
    assert [e.actions for e in finished] == [[wrong, right], [wrong], [wrong]]
    report = gap_report(finished, mcp.make_env, workers=2)
    judged = report["sources"]["judge"]
    assert report["real_success"] == pytest.approx(1 / 3)
    assert (judged["tp"], judged["fp"], judged["fn"], judged["tn"]) == (1, 1, 0, 1)
    assert judged["precision"] == 0.5 and judged["recall"] == 1.0 and judged["undecided"] == pytest.approx(1 / 3)
    assert report["rewarded"]["tp"] == 1 and report["rewarded"]["fp"] == 1
    assert report["sources"]["footer"]["fp"] == 2 and report["real_steps"] == 0
