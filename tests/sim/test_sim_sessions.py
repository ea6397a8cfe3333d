"""The session API from the Simulator to the engine: a step sends only the new tokens, the
history lives in the world model (text) and the engine (tokens), and the tokens equal what a
full rendering of the history gives, so answers equal the static engine's on the whole
history."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.world_models import CardedWorldModel, SessionWorldModel, WorldModelSession
from agentworld.sim import Simulator
from agentworld.sim.backends.hf import HFBackend, HFWorldModel
from agentworld.sim.engine import EngineLoop, PagedEngine

SYSTEM = "You simulate a terminal.\n\nInitial observation:\n$ "


def episode_tokens(wm: HFWorldModel, episode_id: str) -> list[int]:
    assert isinstance(wm.engine, EngineLoop)
    wm.engine.stats()  # the loop thread is between iterations after this read
    engine: PagedEngine = wm.engine.engine
    return list(engine.episodes[episode_id].token_ids)


def test_capability_session_world_model(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    static = HFBackend().load(str(trained_dir), max_new_tokens=40, engine="static")
    assert isinstance(wm, SessionWorldModel) and isinstance(static, SessionWorldModel)
    assert not isinstance(ConstantWorldModel("empty"), SessionWorldModel)
    session = wm.open_session(SYSTEM)
    assert isinstance(session, WorldModelSession)
    before = wm.engine.stats()  # type: ignore[attr-defined]
    for turn, action in enumerate(["ls", "cat notes.md", "pwd", "echo hi > a.txt"]):
        request = [*session.messages(), {"role": "user", "content": action}]
        full = wm.encode(request)
        prediction = session.append(action).result(timeout=120)
        # the prompt built from the new tokens is the full rendering of the history
        assert episode_tokens(wm, session.episode_id)[: len(full)] == full
        [expected] = static.predict([request])
        assert prediction.text == expected.text and prediction.observation == "hello.txt"
        assert len(session.messages()) == 3 + 2 * turn
    after = wm.engine.stats()  # type: ignore[attr-defined]
    # from the second step on only the new turn is prefilled: the rest is pinned KV
    assert after.num_computed_tokens - before.num_computed_tokens < 2 * len(full)
    child = session.fork()
    assert child.messages() == session.messages() and child.episode_id != session.episode_id
    assert child.append("ls").result(timeout=120).observation == "hello.txt"
    assert len(child.messages()) == len(session.messages()) + 2
    child.close()
    session.close()
    assert wm.engine.stats().num_used_blocks == 0  # type: ignore[attr-defined]


def test_a_session_keeps_each_turns_think_block_as_sft_and_eval_do(think_dir: Path) -> None:
    """With domain rationales the simulator writes each answer's think block; the session's
    history keeps it (as SFT's whole-episode windows do), and a stateless request of the same
    history without think blocks (evaluation's, from real observations) gets them back: the
    same tokens, the same answer."""
    import re

    options = {"max_new_tokens": 40, "reasoning": "domain", "domain": "terminal"}
    wm = HFBackend().load(str(think_dir), **options)
    static = HFBackend().load(str(think_dir), engine="static", **options)
    session = wm.open_session(SYSTEM)
    for turn, action in enumerate(["ls", "cat notes.md", "pwd"]):
        history = session.messages()
        assert all(m["content"].startswith("<think>") for m in history if m["role"] == "assistant")
        bare = [{**m, "content": re.sub(r"(?s)^<think>.*?</think>\n", "", m["content"])}
                for m in history]
        request = [*bare, {"role": "user", "content": action}]
        assert turn == 0 or bare != history
        prediction = session.append(action).result(timeout=120)
        full = wm.encode(wm.history_with_think(request))
        assert episode_tokens(wm, session.episode_id)[: len(full)] == full
        [expected] = static.predict([request])
        assert prediction.text == expected.text and prediction.text.startswith("<think>")
        assert prediction.observation == "hello.txt"
    session.close()


def test_session_on_the_static_engine_keeps_its_history(trained_dir: Path) -> None:
    static = HFBackend().load(str(trained_dir), max_new_tokens=40, engine="static")
    sim = Simulator(static)
    a, b = sim.open_sync("You simulate a terminal.", "$ "), sim.open_sync("sys", "x")
    for turn in range(2):
        [expected] = static.predict([[*sim.messages(a), {"role": "user", "content": "ls"}]])
        results = sim.step_many([(a, "ls"), (b, "pwd")])
        assert [obs for obs, _ in results] == ["hello.txt", "hello.txt"]
        assert results[0][1]["raw"] == expected.text and results[0][1]["turn"] == turn
    assert len(sim.messages(a)) == len(sim.messages(b)) == 5


def test_capability_carded_world_model(trained_dir: Path) -> None:
    class Carded(ConstantWorldModel):
        rewards = True
        history_window = 1

    assert isinstance(Carded("empty"), CardedWorldModel)
    assert not isinstance(ConstantWorldModel("empty"), CardedWorldModel)
    sim = Simulator(Carded("empty"))
    assert (sim.rewards, sim.history_window) == (True, 1)
    assert not Simulator(Carded("empty"), rewards=False).rewards
    assert not Simulator(ConstantWorldModel("empty")).rewards
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40, history_window=1)
    assert isinstance(wm, CardedWorldModel) and Simulator(wm).history_window == 1


def test_replace_last_reanchors_the_history(trained_dir: Path) -> None:
    from agentworld.core.formats import wrap_observation
    from agentworld.sim import SimEnv

    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    static = HFBackend().load(str(trained_dir), max_new_tokens=40, engine="static")
    env = SimEnv(wm, system_prompt="You simulate a terminal.", initial_observation="$ ", reward_source="none")
    env.reset()
    assert env.step("ls")[0] == "hello.txt"
    assert env.anchor("real.txt notes.md") is False  # the episode goes on
    history = env.simulator.messages(env.episode_id)
    assert history[-1] == {"role": "assistant", "content": wrap_observation("real.txt notes.md")}
    # the next request renders the replaced history in full (no stale tokens of the prediction)
    request = [*history, {"role": "user", "content": "pwd"}]
    [expected] = static.predict([request])
    observation, *_, info = env.step("pwd")
    assert info["raw"] == expected.text and observation == "hello.txt"
    assert episode_tokens(wm, env.episode_id)[: len(wm.encode(request))] == wm.encode(request)
    assert env.anchor("/root", terminated=True) is True
    env.close()
    session = wm.open_session(SYSTEM)
    with pytest.raises(ValueError, match="needs a turn"):
        session.replace_last("x")
    session.close()


def _slide_through(wm, turns: int = 80) -> tuple[list, list, list, int]:  # noqa: ANN001
    """80 turns of a session on a context of ~24 turns; the session's requests are built and
    committed here as ``append`` does, answers given (the tiny model does not answer past the
    short histories it was trained on). Returns each request's start, the evicted turns after
    it, the prompt length after each slide, and the budget; asserts every prompt is the
    rendering of the window (system, kept turns, new action) within the budget."""
    from agentworld.core.formats import wrap_observation
    from agentworld.sim.backends.hf_session import HFSession

    session = HFSession(wm, [{"role": "system", "content": SYSTEM}])
    user = {"role": "user", "content": "ls d0"}
    answer = {"role": "assistant", "content": wrap_observation("notes-0.md hello.txt")}
    turn = len(wm.render([user, answer, user])) - len(wm.render([user]))
    wm.max_positions = 40 + len(wm.render([session.messages()[0], user])) + 24 * turn
    room = 40  # tokens left to generate
    budget = wm.prompt_budget(room)
    starts, evicted, after_slide = [], [], []
    for k in range(turns):
        user = {"role": "user", "content": f"ls d{k % 10}"}  # turns differ: no shared tail
        held, kept, history = session._held, session.evicted_turns, session.messages()
        ids, start = session._prompt(user, room)
        window = [*history[:1], *history[1 + 2 * session.evicted_turns :], user]
        prompt = wm.render(window)
        assert (start or 0) + len(ids) == len(prompt) <= budget
        assert ids == prompt[start or 0 :]  # the new tokens continue the held ones exactly
        if session.evicted_turns == kept and held is not None and k > 0:
            assert start == held  # no slide: only the new turn is sent
        elif k > 0:
            after_slide.append(len(prompt))
        starts.append(start)
        evicted.append(session.evicted_turns)
        answer = {"role": "assistant", "content": wrap_observation(f"notes-{k}.md hello.txt")}
        session._messages += [user, answer]  # as _commit does after a parsed answer
        session._held = (start or 0) + len(ids)
    return starts, evicted, after_slide, budget


def test_a_full_context_slides_the_window_instead_of_rendering_every_step(trained_dir: Path) -> None:
    """Once the next turn would not fit, the oldest turns are evicted down to SLIDE_TARGET of
    the budget in one go; between slides a request sends only its new turn."""
    from agentworld.sim.backends.hf_session import SLIDE_TARGET

    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    assert wm.slide_target == SLIDE_TARGET
    starts, evicted, after_slide, budget = _slide_through(wm)
    slides = [k for k in range(1, len(evicted)) if evicted[k] > evicted[k - 1]]
    assert 3 <= len(slides) <= 10, evicted  # about one per (1 - SLIDE_TARGET) * budget tokens
    assert all(evicted[k] - evicted[k - 1] >= 4 for k in slides)  # several turns at a time
    assert all(starts[k] == 0 for k in slides)  # a slide renders the window once, from 0
    assert sum(s == 0 for s in starts) == len(slides) + 1  # and nothing else does (but step 0)
    assert all(n <= SLIDE_TARGET * budget for n in after_slide)


def test_a_lower_slide_target_slides_less_often_and_further(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40, slide_target=0.5)
    _, evicted, after_slide, budget = _slide_through(wm)
    low = [evicted[k] - evicted[k - 1] for k in range(1, len(evicted)) if evicted[k] > evicted[k - 1]]
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40, slide_target=0.75)
    _, evicted, _, _ = _slide_through(wm)
    usual = [evicted[k] - evicted[k - 1] for k in range(1, len(evicted)) if evicted[k] > evicted[k - 1]]
    assert 2 <= len(low) < len(usual), (low, usual)
    assert min(low) > max(usual) // 2 and sum(low) / len(low) > sum(usual) / len(usual)
    assert all(n <= 0.5 * budget for n in after_slide)
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError, match="slide_target must be in"):
            HFBackend().load(str(trained_dir), slide_target=bad)
