"""Client of the served terminal: OpenEnv's generic client (dict observations), under the
name AutoEnv looks for (``AgentworldTerminalEnv``)."""

from openenv.core.generic_client import GenericEnvClient


class AgentworldTerminalEnv(GenericEnvClient):
    """``reset(seed=...)`` starts the sampler's task for that seed; ``step({"text": cmd})``
    runs one command line. Pass ``headers={"Authorization": "Bearer KEY"}`` when the server
    has an API key."""
