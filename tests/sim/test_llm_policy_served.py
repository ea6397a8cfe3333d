"""The terminal domain's ``llm`` collection policy driven by our own ``serve-openai`` server
(real uvicorn on loopback, a real tiny checkpoint) in real sandboxed bash."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from agentworld.core.collect import run_episode
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.llm_policy import LLMPolicy, parse_command
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.server import HFChatModel, serve_in_thread
from sandboxes import needs_sandbox


@needs_sandbox
def test_llm_policy_on_serve_openai(qwen3_dir: Path):
    domain = TerminalDomain()
    task = domain.tasks().sample(1, seed=2)[0]
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=16)
    with serve_in_thread(HFChatModel(wm), "tiny", max_wait_s=0.01) as server:
        policy = LLMPolicy(base_url=server.base_url, temperature=0.0, max_steps=2,
                           max_tokens=16)
        env = domain.make_env()
        try:
            episode = run_episode(domain, env, task, policy, seed=0, max_steps=2)
        finally:
            env.close()
        # the first action is the server's greedy answer to the same request, parsed
        policy.reset(0)
        body = {"model": "tiny", "messages": policy.messages(task, [episode.initial_observation]),
                "temperature": 0.0, "max_tokens": 16, "seed": 0}
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())["choices"][0]["message"]["content"]
    assert policy.model == "tiny"  # discovered through GET /v1/models
    expected = parse_command(answer)
    if expected is None:
        assert episode.steps == []
    else:
        assert episode.steps[0].action.text == expected
        assert episode.steps[0].observation.state is not None  # a real terminal answered
