"""Servers over a loaded checkpoint: :mod:`.openai_server` (OpenAI-compatible chat completions).

``chat`` is the backend seam (:class:`ChatModel`), :mod:`agentworld.sim.batcher` gathers
concurrent requests into batched calls, ``protocol`` is the OpenAI wire format, ``thread``
runs a server in a background thread.
"""

from agentworld.sim.server.chat import ChatModel, ChatRequest, HFChatModel, chat_model_for
from agentworld.sim.server.openai_server import create_app, serve
from agentworld.sim.server.thread import ServerThread, serve_in_thread

__all__ = [
    "ChatModel",
    "ChatRequest",
    "HFChatModel",
    "ServerThread",
    "chat_model_for",
    "create_app",
    "serve",
    "serve_in_thread",
]
