"""Gymnasium spaces for free text, safe in vector environments across processes.

Gymnasium's ``AsyncVectorEnv(shared_memory=True)`` (its default) copies each observation into
a fixed ``int32`` array of ``max_length`` character indices per sub-environment
(``gymnasium/vector/utils/shared_memory.py``, ``_write_text_to_shared_memory``). A terminal's
or a world model's output is free text: it may be longer than the array, or hold characters
outside the space's charset, and the parent then reads back a string of the charset's first
character (``'000...'``) without an error. :class:`FreeText` refuses shared memory instead, so
``AsyncVectorEnv`` fails at construction with a message that names the fix
(``shared_memory=False``, which pickles each observation through the worker's pipe, whole).

Needs ``gymnasium`` (``pip install 'agentworld-core[gym]'``; every domain with a real
environment installs it).
"""

from __future__ import annotations

from typing import Any

from agentworld.core.extras import require

require("gymnasium", "gym", "agentworld.core.gymvec (a Gymnasium space)")

from gymnasium.error import CustomSpaceError  # noqa: E402 -- after the check above
from gymnasium.spaces import Text  # noqa: E402
from gymnasium.vector.utils import create_shared_memory  # noqa: E402


class FreeText(Text):
    """A ``gymnasium.spaces.Text`` of free text (an observation or action string) that has no
    shared-memory form.

    It samples, checks membership and batches (``batch_space``, ``concatenate``) as ``Text``;
    only :func:`gymnasium.vector.utils.create_shared_memory` refuses it, so
    ``AsyncVectorEnv(..., shared_memory=True)`` raises ``ValueError`` (from
    :class:`~gymnasium.error.CustomSpaceError`) rather than return wrong observations, and
    ``AsyncVectorEnv(..., shared_memory=False)`` returns each observation exactly.

    Args: as ``gymnasium.spaces.Text`` (``max_length`` in characters, ``min_length``,
    ``charset``, ``seed``).
    """


@create_shared_memory.register(FreeText)
def _refuse_shared_memory(space: FreeText, n: int = 1, ctx: Any = None) -> Any:
    """Raise :class:`~gymnasium.error.CustomSpaceError`: free text has no fixed-size form."""
    raise CustomSpaceError(
        f"FreeText (free text of up to {space.max_length} characters, any of which may lie "
        "outside the charset) has no shared-memory form: its observations would come back as "
        "the charset's first character; use AsyncVectorEnv(..., shared_memory=False), or "
        'gymnasium.make_vec(..., vectorization_mode="async", '
        'vector_kwargs={"shared_memory": False})'
    )
