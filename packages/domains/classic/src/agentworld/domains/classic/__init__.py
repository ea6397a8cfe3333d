"""agentworld classic domains: Gymnasium toy-text environments (FrozenLake, Taxi, CliffWalking)
as text, with rewards, for measuring sim-to-real transfer cheaply.

Usage::

    from agentworld.core.plugins import get_domain

    domain = get_domain("frozenlake-8x8")
    env = domain.make_env()
    task = domain.tasks().sample(1, seed=0)[0]
    obs, info = env.reset(seed=0, options={"task": task})
    obs, reward, terminated, truncated, info = env.step("right")

Importing the package registers ``agentworld/<variant>-v0`` ids with Gymnasium
(:mod:`agentworld.domains.classic.registration`): ``gymnasium.make("agentworld/taxi-v0")``.
"""

from agentworld.domains.classic.domain import ClassicDomain
from agentworld.domains.classic.env import ClassicEnv
from agentworld.domains.classic.registration import register_envs
from agentworld.domains.classic.variants import VARIANTS, Variant

register_envs()

__all__ = ["VARIANTS", "ClassicDomain", "ClassicEnv", "Variant"]
