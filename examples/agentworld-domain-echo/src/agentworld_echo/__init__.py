"""A complete third-party agentworld domain in one module.

The environment echoes each action back in upper case; the episode ends
after the action ``bye``. Install next to agentworld-core and it appears in
``agentworld domains`` and works with ``agentworld collect --domain echo``.

``EchoDomain`` subclasses ``agentworld.core.domain_base.DomainBase``, which declares every
hook a caller may use with its default (docs/plugins.md); it overrides the ones it knows
better: the system prompt, the environment, tasks, policies, and ``initial_observation``
(so a simulated echo environment starts without the real one). The environment's ``step``
always receives an ``agentworld.core.types.Action``.
"""

import random

from agentworld.core.domain_base import DomainBase, PolicyBase
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Action, Observation, Task


class EchoEnv:
    def reset(self, *, seed=None, options=None):
        return Observation(text="ready"), {}

    def step(self, action: Action):
        done = action.text == "bye"
        return Observation(text=action.text.upper()), float(done), done, False, {}

    def close(self):
        pass


class Tasks:
    kinds = ("chat",)

    def sample(self, n, *, seed):
        return [Task(id=f"echo-{seed}-{i}", domain="echo", instruction="say things, then bye",
                     kind="chat") for i in range(n)]


class RandomWords(PolicyBase):
    name = "random"

    def reset(self, seed):  # called before each episode
        self.rng = random.Random(seed)
        self.words = self.rng.randint(1, 6)  # words said before "bye"

    def act(self, task, history):  # history: initial observation, then (action, observation)s
        if len(history) >= 2 * self.words + 1:
            return Action(text="bye")
        return Action(text=self.rng.choice(["hello", "world", "echo"]))


class EchoDomain(DomainBase):
    name = "echo"
    version = "0.1.0"

    def system_prompt(self, task):
        return "You simulate an environment that repeats each action in upper case."

    def make_env(self, **kwargs):
        return EchoEnv()

    def tasks(self):
        return Tasks()

    def policies(self):
        return {"random": RandomWords()}

    def action_type(self, action):
        return action.text

    def describe(self):
        return {"environment": "in-process echo"}

    def initial_observation(self, task):  # the observation at reset, without the real env
        return "ready"


@hookimpl
def register_domains(register):
    register("echo", EchoDomain)
