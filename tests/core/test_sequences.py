"""The one LCS of the tree (:mod:`agentworld.core.sequences`), used by the domain scorers."""

from agentworld.core.sequences import lcs_f1, lcs_length


def test_lcs_length_and_f1() -> None:
    assert lcs_length("ABCBDAB", "BDCABA") == 4  # CLRS 15.4's example
    assert lcs_length([], ["a"]) == 0 and lcs_length(["a", "b"], ["b", "a"]) == 1
    assert lcs_f1([], []) == 1.0 and lcs_f1(["a"], []) == 0.0
    assert lcs_f1(["a", "b", "c"], ["a", "c"]) == 2 * 2 / 5


def test_multiset_f1() -> None:
    from agentworld.core.sequences import multiset_f1

    assert multiset_f1("ab", "ac") == 0.5  # bags of characters: o=1, |p|+|r|=4
    assert multiset_f1(["x", "x", "y"], ["x", "y", "y"]) == 2 * 2 / 6
    assert multiset_f1([], []) == 1.0 and multiset_f1(["a"], []) == 0.0
