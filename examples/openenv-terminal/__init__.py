"""The agentworld terminal as an OpenEnv environment package (client and models)."""

from .client import AgentworldTerminalEnv
from .models import AgentworldTerminalAction, AgentworldTerminalObservation

__all__ = ["AgentworldTerminalAction", "AgentworldTerminalEnv", "AgentworldTerminalObservation"]
