"""The ASGI app OpenEnv's tooling starts (``app: server.app:app`` in ``openenv.yaml``).

Environment variables: ``AGENTWORLD_API_KEY`` (required when the port is reachable from
other machines, as in a Space), ``AGENTWORLD_MAX_SESSIONS`` (default 8).
"""

import os

from agentworld.sim.openenv import build_app

app = build_app(
    "terminal",
    real=True,
    api_key=os.environ.get("AGENTWORLD_API_KEY") or None,
    max_sessions=int(os.environ.get("AGENTWORLD_MAX_SESSIONS", "8")),
)


def main() -> None:
    """Serve on ``$HOST:$PORT`` (default 0.0.0.0:8000, as OpenEnv's containers do);
    refused without ``AGENTWORLD_API_KEY`` off loopback."""
    from agentworld.sim.openenv import serve

    serve(
        app,
        host=os.environ.get("HOST", "0.0.0.0"),
        port=int(os.environ.get("PORT", "8000")),
        api_key=os.environ.get("AGENTWORLD_API_KEY") or None,
    )


if __name__ == "__main__":
    main()
