"""The paged-KV continuous-batching engine behind the ``hf`` backend.

``blocks`` (block pool, chained hashes), ``sequence`` (episode state), ``scheduler``
(token-budget batching, admission, preemption), ``runner`` (packed forward passes)
``engine`` (:class:`PagedEngine`) and ``loop`` (:class:`EngineLoop`, the engine on a
background thread, shared by many callers).
"""

from agentworld.sim.engine.engine import EngineStats, PagedEngine
from agentworld.sim.engine.loop import EngineLoop

__all__ = ["EngineLoop", "EngineStats", "PagedEngine"]
