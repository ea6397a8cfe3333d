"""Gymnasium spaces for free text, safe in vector environments across processes.

Gymnasium's ``AsyncVectorEnv(shared_memory=True)`` (its default) has the workers write each
observation into a fixed ``int32`` array of ``max_length`` character indices per
sub-environment, and the parent reads a ``Text`` space's array into strings once, when the
vector env is made (``gymnasium/vector/utils/shared_memory.py``: ``read_from_shared_memory``
returns a tuple of ``str`` there, where for ``Box`` it returns a view). Every observation then
comes back as the zeroed array spells it, the charset's first character repeated (``'000...'``
for the terminal), without an error; free text longer than the array, or with characters
outside the charset, would not fit it either. :class:`FreeText` refuses shared memory instead,
so ``AsyncVectorEnv`` fails at construction with a message that names the fix
(``shared_memory=False``, which pickles each observation through the worker's pipe, whole,
with the public ``state`` of an :class:`~agentworld.core.types.ObservationText`).

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
        f"FreeText (free text of up to {space.max_length} characters) has no shared-memory "
        "form: Gymnasium reads a Text space's shared memory once, so every observation would "
        "come back as the charset's first character repeated; use "
        "AsyncVectorEnv(..., shared_memory=False), or "
        'gymnasium.make_vec(..., vectorization_mode="async", '
        'vector_kwargs={"shared_memory": False})'
    )
