"""``SearchEnv``: the real search environment (Gymnasium API, ``agentworld/search-v0``).

The agent calls the tools of :mod:`agentworld.domains.search.tools` against the BM25 engine
over the offline corpus. ``reset`` shows the task's question; ``step`` returns the tool's raw
response text. The ``answer`` tool ends the episode: reward 1.0 when the answer is correct
(:func:`~agentworld.domains.search.tasks.is_correct`), else 0.0. A malformed call is an
``Error: ...`` observation (reward 0, the episode goes on), never an exception. No agent code
runs, so there is no sandbox; the engine is shared read-only between environments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium

from agentworld.core.gymvec import FreeText
from agentworld.core.toolcalls import call_of
from agentworld.core.protocols import TaskSampler
from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.search import tools
from agentworld.domains.search.engine import load_engine
from agentworld.domains.search.tasks import SearchTaskSampler, is_correct
from agentworld.domains.search.user_corpus import load_user_engine

ACTION_MAX_LENGTH = 8192
OBSERVATION_MAX_LENGTH = 200_000
_CHARSET = frozenset(chr(c) for c in range(32, 0x2FFF)) | {"\n", "\t"}


def render_call(name: str, arguments: dict[str, Any]) -> Action:
    """An :class:`Action` for a tool call, its text the AgentWorldBench action form: a
    ```` ```json ```` fence around ``{"name": ..., "arguments": {...}}`` indented by 2."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, indent=2)
    return Action(text=f"```json\n{body}\n```", name=name, arguments=arguments)


class SearchEnv(gymnasium.Env):
    """A real search environment.

    Args:
        world_seed: Seed of the corpus's fictional world (tasks must come from the same).
        tasks: Sampler drawing a task at each ``reset`` without one (default
            :class:`SearchTaskSampler` of ``world_seed``, or with ``corpus``
            :class:`~agentworld.domains.search.user_tasks.UserTaskSampler` of it).
        corpus: A folder of the user's documents to search instead of the built-in corpus
            (:mod:`agentworld.domains.search.user_corpus`; its index cached by content).

    Raises:
        agentworld.domains.search.user_corpus.CorpusError: ``corpus`` holds no document.

    Spaces: ``action_space`` is ``spaces.Text`` of one JSON tool call (up to 8192 characters);
    ``observation_space`` ``spaces.Text`` up to 200,000 characters.
    """

    metadata = {"render_modes": []}

    def __init__(self, world_seed: int = 0, tasks: TaskSampler | None = None,
                 corpus: Path | str | None = None) -> None:
        self.corpus: str | None = None
        if corpus is not None:
            from agentworld.domains.search.user_tasks import UserTaskSampler

            self.engine, self.corpus = load_user_engine(str(Path(corpus).resolve()))
            self.tasks = tasks or UserTaskSampler(self.engine.pages, self.corpus)
        else:
            self.engine = load_engine(world_seed)
            self.tasks = tasks or SearchTaskSampler(world_seed)
        self.world_seed = world_seed
        self.action_space = FreeText(ACTION_MAX_LENGTH, min_length=1, charset=_CHARSET)
        self.observation_space = FreeText(OBSERVATION_MAX_LENGTH, min_length=0,
                                             charset=_CHARSET)
        self.task: Task | None = None
        self.memory: dict[str, Any] = {}
        self.visited: list[str] = []
        self.seen: list[str] = []
        self.done = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[ObservationText, dict[str, Any]]:
        """Start an episode: empty memory, no pages visited. ``options={"task": Task}`` (or its
        dict) sets the task; without one a task is drawn from the sampler.

        Raises:
            ValueError: the task is of another world seed.
        """
        super().reset(seed=seed)
        task = (options or {}).get("task")
        if task is None:
            task = self.tasks.sample(1, seed=int(self.np_random.integers(2**31)))[0]
        self.task = task if isinstance(task, Task) else Task.model_validate(task)
        world = self.task.setup.get("world_seed", self.world_seed)
        if world != self.world_seed:
            raise ValueError(f"task {self.task.id} is of world {world}, this env of "
                             f"{self.world_seed}")
        if self.task.setup.get("corpus") != self.corpus:
            raise ValueError(f"task {self.task.id} is of corpus "
                             f"{self.task.setup.get('corpus') or 'built-in'}, this env's is "
                             f"{self.corpus or 'built-in'}")
        self.memory, self.visited, self.seen, self.done = {}, [], [], False
        return ObservationText(self.task.instruction, {"tool": None}), {"task": self.task.id}

    def step(self, action: Action | str) -> tuple[ObservationText, float, bool, bool, dict[str, Any]]:
        """Run one tool call; ``(observation, reward, terminated, truncated, info)`` with
        ``info["tool"]`` (the tool name, or ``None`` when unparsed) and ``info["error"]``.

        Raises:
            RuntimeError: the episode has not been reset, or has ended.
        """
        if self.task is None or self.done:
            raise RuntimeError("no episode is running (never reset, or it has ended): call reset()")
        name: str | None = None
        reward, terminated = 0.0, False
        try:
            name, arguments = call_of(action)
            if name == "web_search":
                text, urls = tools.web_search(self.engine, arguments)
                self.seen += [u for u in urls if u not in self.seen]
            elif name == "web_extractor":
                text, urls = tools.web_extractor(self.engine, arguments)
                self.visited += urls
            elif name == "dict_memory":
                text = tools.dict_memory(self.memory, arguments)
            elif name == "answer":
                given = arguments.get("answer")
                if not isinstance(given, str) or set(arguments) - {"answer"}:
                    raise tools.ToolError('Error: answer needs exactly one argument "answer", '
                                          "a string")
                correct = is_correct(given, self.task.check)
                reward, terminated = float(correct), True
                text = f"Answer submitted: {given}\nResult: {'correct' if correct else 'incorrect'}"
            else:
                raise tools.ToolError(f"Error: unknown tool {name!r}; valid: "
                                      f"{', '.join(tools.TOOLS)}")
        except tools.ToolError as error:
            text = str(error)
        self.done = terminated
        error = text.startswith("Error:")
        state = {"tool": name, "error": error}
        return ObservationText(text, state), reward, terminated, False, {"tool": name,
                                                                        "error": error}

    def privileged_state(self) -> dict[str, Any]:
        """The state behind the last observation: ``memory`` (a copy), ``visited`` (URLs
        extracted, in order, repeats kept) and ``seen`` (URLs listed by searches, first
        appearance order)."""
        return {"memory": json.loads(json.dumps(self.memory)), "visited": list(self.visited),
                "seen": list(self.seen)}

    def close(self) -> None:
        """Nothing to release (the engine is shared)."""
