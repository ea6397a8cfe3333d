"""Wire types of the served terminal: the action ``{"text": command}`` and the observation
``{"text", "metadata"}`` (OpenEnv's ``Action`` and ``Observation`` subclasses)."""

from agentworld.sim.openenv.models import TextAction as AgentworldTerminalAction
from agentworld.sim.openenv.models import TextObservation as AgentworldTerminalObservation

__all__ = ["AgentworldTerminalAction", "AgentworldTerminalObservation"]
