"""``bench/heldout_loss.py --by-context``: how much context a copied token needs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "heldout_loss.py"


def load():
    spec = importlib.util.spec_from_file_location("heldout_loss", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_context_classes_name_the_shortest_deciding_context():
    # "a b c X" and "d b c Y", then "a b c" again: after "c" one token (c -> X or Y) and two
    # (b c -> X or Y) do not decide, three (a b c -> X) do.
    a, b, c, d, x, y, z = range(1, 8)
    ids = [a, b, c, x, d, b, c, y, a, b, c, x, z]
    mask = [0] * 9 + [1, 0, 1, 1]
    classes = load().context_classes(ids, mask)
    # b after a: a was followed only by b; X after a b c; z never followed x before (d did)
    assert classes == {9: "n=1", 11: "n=3", 12: "not copyable"}
