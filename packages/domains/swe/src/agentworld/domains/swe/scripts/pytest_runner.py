"""pytest runner of a user's repository (:mod:`agentworld.domains.swe.user_repo`), run inside
the sandbox with the python of the repository's environment (``/opt/venv/bin/python -I -B -``,
:mod:`agentworld.domains.swe.user_env`) in the repository root.

``python - [NODE_ID ...]``: the repository's source (the root, and ``src/`` for a src layout)
first on ``sys.path`` (``-I`` ignores ``PYTHONPATH``), then ``pytest -v`` with no cache folder
written, classic progress lines (``tests/test_a.py::test_b PASSED``), short tracebacks and a
``FAILED id - reason`` summary line per failure, 80 columns wide whatever the terminal's width.
Exit status: pytest's.
"""
import os
import sys

os.environ["COLUMNS"] = "80"

sys.dont_write_bytecode = True
sys.path.insert(0, ".")

import pytest

ARGS = ["-v", "-p", "no:cacheprovider", "--color=no", "-o", "console_output_style=classic",
        "--tb=short", "-rfE"]

if __name__ == "__main__":
    sys.exit(pytest.main([*ARGS, *sys.argv[1:]]))
