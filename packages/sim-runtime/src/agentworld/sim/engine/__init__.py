"""The paged-KV continuous-batching engine behind the ``hf`` backend.

``blocks`` (block pool, chained hashes), ``sequence`` (episode state), ``scheduler``
(token-budget batching, admission, preemption), ``runner`` (packed forward passes),
``paged`` (:class:`PagedEngine`), ``checks`` (why a request is refused), ``stats``
(:class:`EngineStats`), ``sizing`` (default KV budget) and ``loop`` (:class:`EngineLoop`,
the engine on a background thread, shared by many callers).
"""

from agentworld.sim.engine.loop import EngineLoop
from agentworld.sim.engine.paged import PagedEngine
from agentworld.sim.engine.stats import EngineStats

__all__ = ["EngineLoop", "EngineStats", "PagedEngine"]
