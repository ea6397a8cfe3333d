"""Test runner of the swe domain's tasks, run with python3 inside the sandbox (stdlib only).

``python3 - [TEST_ID ...]`` in the repository root: discovers ``tests`` (or loads the given
test ids) with :mod:`unittest` and prints unittest's verbose log with each test named by its
full id (``tests.test_stats.MedianTests.test_median_even ... ok``), the failure tracebacks,
``Ran N tests`` (no timing, so logs are reproducible) and ``OK`` or ``FAILED (...)``.
Exit status 0 when every test passed, else 1.
"""
import io
import re
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, ".")


class _Result(unittest.TextTestResult):
    def getDescription(self, test):
        return test.id()


def main(names):
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromNames(names) if names else loader.discover("tests", top_level_dir=".")
    stream = io.StringIO()
    result = unittest.TextTestRunner(stream=stream, verbosity=2, resultclass=_Result).run(suite)
    log = re.sub(r"^(Ran \d+ tests?) in [0-9.]+s$", r"\1", stream.getvalue(), flags=re.M)
    sys.stdout.write(log)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
