from agentworld.core.formats import (
    answer_prefix,
    cpt_text,
    episode_messages,
    parse_prediction,
    previous_observation,
    sft_pair,
    transcript_prompt,
    wrap_observation,
)


def test_wrap_and_parse_round_trip():
    answer = wrap_observation("a\nb", reasoning="mkdir made a")
    assert answer.startswith("<think>mkdir made a</think>\n<predicted_observation>")
    assert parse_prediction(answer) == "a\nb"
    assert parse_prediction(wrap_observation("")) == ""


def test_answer_prefix_starts_the_target_and_previous_observation_is_found(episodes):
    assert wrap_observation("a", reasoning="ls ~").startswith(answer_prefix("ls ~"))
    episode = episodes[0]
    messages = episode_messages(episode)
    # Before the first action: the initial observation from the system message.
    assert previous_observation(messages[:2]) == episode.initial_observation.text
    # Later: the observation block of the last answer, whatever reasoning precedes it.
    last = messages[:-1] + [{"role": "assistant", "content": wrap_observation("x", "why")}]
    assert previous_observation(last + [{"role": "user", "content": "ls"}]) == "x"
    assert previous_observation([{"role": "user", "content": "ls"}]) == ""


def test_parse_rejects_malformed():
    assert parse_prediction("no block") is None
    assert parse_prediction("<predicted_observation>\nx") is None
    two = wrap_observation("x") + wrap_observation("y")
    assert parse_prediction(two) is None


def test_sft_pair_prompt_and_target(episodes):
    ep = episodes[1]
    messages, target = sft_pair(ep, 2)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[-1]["content"] == "echo 2"
    assert target == wrap_observation("2\nuser@sandbox:~$ ")
    assert target.endswith("</predicted_observation>") and target.count("<predicted_observation>") == 1
    assert "Initial observation:\nuser@sandbox:~$ " in messages[0]["content"]
    assert "print numbers" in messages[0]["content"]


def test_episode_messages_and_cpt_text(episodes):
    ep = episodes[0]
    messages = episode_messages(ep)
    assert len(messages) == 1 + 2 * len(ep.steps)
    text = cpt_text(ep)
    assert ">>> echo 0\n0\nuser@sandbox:~$ " in text
    assert text.count(">>> ") == 3


def test_transcript_prompt_is_the_cpt_text_prefix_before_each_observation(episodes):
    for ep in episodes:
        messages, text = episode_messages(ep), cpt_text(ep)
        for t, step in enumerate(ep.steps):
            prefix = transcript_prompt(messages[: 2 + 2 * t])
            assert prefix.endswith(f">>> {step.action.text}\n")
            assert text.startswith(prefix + step.observation.text + "\n")
