"""One sequence's block table: its physical block ids in a growable ``int64`` array.

The runner copies every table of a forward pass into a padded ``[n, max_blocks]`` array on
every pass; from a Python list that copy converts each id (O(blocks) interpreter work, about
0.5 ms per pass for 8 sequences at 1,300 blocks each, issue 35 item 3), from this array it is
one ``memcpy``. Appending is amortised O(1) (the capacity doubles), truncation is O(1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np


class BlockTable:
    """Physical block ids of one sequence; block ``i`` holds positions
    ``[i * block_size, (i + 1) * block_size)``. Indexing, iteration and comparison behave as
    on a ``list[int]`` (a slice is a new list); :meth:`view` is the array itself.

    Args:
        ids: Initial block ids.
    """

    __slots__ = ("_ids", "_n")
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(self, ids: Iterable[int] = ()) -> None:
        initial = np.fromiter(ids, dtype=np.int64)
        self._ids = np.empty(max(16, 2 * len(initial)), dtype=np.int64)
        self._ids[: len(initial)] = initial
        self._n = len(initial)

    def view(self) -> np.ndarray:
        """The ids ``[len(self)]`` (int64), without a copy: valid until the next change."""
        return self._ids[: self._n]

    def append(self, block_id: int) -> None:
        if self._n == len(self._ids):
            grown = np.empty(2 * len(self._ids), dtype=np.int64)
            grown[: self._n] = self._ids
            self._ids = grown
        self._ids[self._n] = block_id
        self._n += 1

    def clear(self) -> None:
        self._n = 0

    def copy(self) -> BlockTable:
        return BlockTable(self.view())

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        return iter(self.view().tolist())

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return self.view()[index].tolist()
        return int(self.view()[index])

    def __setitem__(self, index: int, block_id: int) -> None:
        self.view()[index] = block_id

    def __delitem__(self, index: slice) -> None:
        """Only ``del table[k:]`` (truncation to the first ``k`` ids).

        Raises:
            ValueError: any other index.
        """
        if not (isinstance(index, slice) and index.stop is None and index.step is None):
            raise ValueError(f"a block table only truncates (del table[k:]), not {index!r}")
        self._n = len(range(self._n)[: index.start])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BlockTable | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"BlockTable({list(self)})"
