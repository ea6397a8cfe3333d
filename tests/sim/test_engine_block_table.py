"""The sequences' block tables: list behaviour the scheduler relies on, over an int64 array
the runner copies without converting each id."""

from __future__ import annotations

import numpy as np
import pytest
from agentworld.sim.engine.block_table import BlockTable


def test_behaves_as_the_list_it_replaces():
    table, ref = BlockTable([7, 3]), [7, 3]
    for block_id in range(40):  # past the initial capacity: the array grows
        table.append(block_id)
        ref.append(block_id)
    table[-1], ref[-1] = 99, 99  # copy-on-write of the last block
    assert table == ref and list(table) == ref and len(table) == 42
    assert table[0] == 7 and table[-1] == 99 and table[2:5] == [0, 1, 2]
    assert isinstance(table[0], int) and isinstance(table[1:3], list)
    del table[5:]
    del ref[5:]
    assert table == ref and bool(table)
    copy = table.copy()
    copy.append(1)
    assert table == ref and copy == [*ref, 1]  # a copy owns its ids
    table.clear()
    assert not table and table == [] and len(table) == 0


def test_view_is_the_array_without_a_copy():
    table = BlockTable(range(5))
    view = table.view()
    assert view.dtype == np.int64 and view.tolist() == [0, 1, 2, 3, 4]
    assert np.shares_memory(view, table.view()) and np.asarray(view) is view


@pytest.mark.parametrize("index", [slice(1, 3), slice(None, 2), slice(0, None, 2), 1])
def test_only_truncation_deletes(index):
    table = BlockTable([1, 2, 3])
    with pytest.raises(ValueError, match=r"only truncates \(del table\[k:\]\)"):
        del table[index]
    assert table == [1, 2, 3]
