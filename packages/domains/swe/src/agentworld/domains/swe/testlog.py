"""Reading the test log of :data:`agentworld.domains.swe.project.RUNNER` (unittest's verbose
format: ``TEST_ID ... ok|FAIL|ERROR|skipped ...`` lines, then failure blocks headed
``FAIL: TEST_ID`` / ``ERROR: TEST_ID``)."""

from __future__ import annotations

import re

_RESULT = re.compile(r"^(\S+) \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
                     re.MULTILINE)
_BLOCK = re.compile(r"^={20,}\n(FAIL|ERROR): (\S+)\n-{20,}\n(.*?)(?=^={20,}$|^-{20,}$|\Z)",
                    re.MULTILINE | re.DOTALL)
SEPARATOR = "-" * 70
_NAMED = re.compile(r"^\w+ \(([\w.]+)\) \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|"
                    r"unexpected success)$", re.MULTILINE)  # python3 -m unittest -v
# a node id's parameters may hold spaces: tests/test_a.py::test_b[[1, 'x']-1.0 million]
_PYTEST = re.compile(r"^([^\s\[]+::[^\s\[]+(?:\[.*\])?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
                     r"(?: |$)", re.MULTILINE)
_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (.+)$", re.MULTILINE)


def outcomes(log: str) -> dict[str, bool]:
    """``{test id: passed}`` of each test line of ``log`` (``ok``, skipped and expected
    failures count as passed), in the runner's format, ``python3 -m unittest -v``'s
    (``test_b (tests.test_a.A.test_b) ... ok``) or ``pytest -v``'s
    (``tests/test_a.py::test_b PASSED``)."""
    out = {name: not word.startswith(("FAIL", "ERROR", "unexpected")) for name, word
           in _RESULT.findall(log)}
    out.update({name: not word.startswith(("FAIL", "ERROR", "unexpected")) for name, word
                in _NAMED.findall(log)})
    out.update({name: word in ("PASSED", "SKIPPED", "XFAIL") for name, word
                in _PYTEST.findall(log)})
    return out


def errors(log: str) -> dict[str, str]:
    """``{test id: the exception line of its traceback}`` (``AssertionError: 3 != 2.5``: the
    first unindented line after the frames) of each failure block of ``log``; for ``pytest
    -rfE``'s summary lines (``FAILED tests/test_a.py::test_b - assert 3 == 2``), the reason."""
    known = sorted(outcomes(log), key=len, reverse=True)
    out = {}
    for rest in _PYTEST_SUMMARY.findall(log):  # FAILED ID - REASON: the longest id it starts
        name = next((k for k in known if rest == k or rest.startswith(f"{k} - ")), None)
        if name is not None:
            out[name] = rest[len(name) + 3:]
    for _, name, body in _BLOCK.findall(log):
        lines = [line for line in body.strip().splitlines()
                 if line.strip() and not line[0].isspace() and not line.startswith("Traceback")]
        out[name] = lines[0] if lines else ""
    return out


def summary(log: str) -> str:
    """The log's closing lines from ``Ran N tests`` (``Ran 32 tests`` / ``OK``), or ``""``."""
    at = log.rfind("\nRan ")
    return log[at + 1:].strip() if at >= 0 else ""
