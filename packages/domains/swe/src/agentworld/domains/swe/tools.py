"""The tools of the swe environment and the sandbox commands behind them.

Tools (names and arguments as SWE-agent's default tool bundle, Yang et al. 2024, "SWE-agent:
Agent-Computer Interfaces Enable Automated Software Engineering"; ``str_replace_editor`` as its
``tools/edit_anthropic``):

* ``bash`` ``{"command": str}``: the command's output (stdout and stderr).
* ``str_replace_editor`` ``{"command": "view"|"create"|"str_replace"|"insert", "path": str,
  ...}``: see :data:`agentworld.domains.swe.project.EDITOR`.
* ``run_tests`` ``{}`` or ``{"tests": [test ids]}``: the repository's unittest log.
* ``submit`` ``{}``: ends the episode; the observation is the diff and the grading result.

Every malformed call is an observation starting ``Error:`` (:class:`ToolError`); nothing here
raises on agent input.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from typing import Any

from agentworld.core.toolcalls import ToolCallError
from agentworld.core.types import Action
from agentworld.domains.swe.project import EDITOR, RUNNER

TOOLS = ("bash", "str_replace_editor", "run_tests", "submit")
EDITOR_COMMANDS = ("view", "create", "str_replace", "insert")
#: A unittest id (``tests.test_a.A.test_b``) or a pytest node id (``tests/test_a.py::test_b``,
#: ``tests/test_a.py::A::test_b[1-x]``); never an option (starts with a letter or ``_``).
_TEST_ID = re.compile(r"^[A-Za-z_][\w.]*$|^[A-Za-z_][\w./-]*\.py(::[^\s:]+)*$")

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {"name": "bash", "description": "Run a bash command in the repository's sandbox (no "
     "network) and return its output. The repository is /home/agent.",
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "description": "The bash command to run."}},
         "required": ["command"]}},
    {"name": "str_replace_editor", "description": "Custom editing tool for viewing, creating "
     "and editing files. `view` shows a file with line numbers (`cat -n`) or lists a directory "
     "2 levels deep; `create` cannot overwrite a file; `str_replace` replaces `old_str`, which "
     "must occur exactly once, with `new_str`; `insert` puts `new_str` after line "
     "`insert_line`. Edits answer with the unified diff of the change.",
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "enum": list(EDITOR_COMMANDS)},
         "path": {"type": "string", "description": "Absolute path of a file or directory."},
         "file_text": {"type": "string", "description": "Content of the file to create."},
         "old_str": {"type": "string", "description": "Text to replace (exactly once)."},
         "new_str": {"type": "string", "description": "Replacement or inserted text."},
         "insert_line": {"type": "integer", "description": "Insert after this line (0: top)."},
         "view_range": {"type": "array", "items": {"type": "integer"},
                        "description": "[start, end] lines to view; end -1: to the end."}},
         "required": ["command", "path"]}},
    {"name": "run_tests", "description": "Run the repository's test suite (python3 -m "
     "unittest, verbose) or the given test ids, and return the test log.",
     "parameters": {"type": "object", "properties": {
         "tests": {"type": "array", "items": {"type": "string"},
                   "description": "Test ids such as tests.test_stats.MeanTests.test_mean."}}}},
    {"name": "submit", "description": "Submit the current state of the repository as the fix; "
     "ends the episode and shows the diff and the test result.",
     "parameters": {"type": "object", "properties": {}}},
]


ToolError = ToolCallError  # a malformed call: its message is the tool's error observation


def render_call(name: str, arguments: dict[str, Any]) -> Action:
    """An :class:`Action` for a tool call, its text the AgentWorldBench action form: a
    ```` ```json ```` fence around ``{"name": ..., "arguments": {...}}`` indented by 2."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, indent=2)
    return Action(text=f"```json\n{body}\n```", name=name, arguments=arguments)


def unknown_arguments(arguments: dict[str, Any], known: set[str], tool: str) -> None:
    """Raises :class:`ToolError` naming the arguments of ``tool`` not in ``known``."""
    extra = sorted(set(arguments) - known)
    if extra:
        raise ToolError(f"Error: {tool}: unknown argument(s) {', '.join(extra)}; valid: "
                        f"{', '.join(sorted(known))}")


def script(source: str, args: list[str], python: str = "python3") -> str:
    """A shell command running ``source`` with ``PYTHON -`` (``python``: the interpreter and
    its options; the script is read from a here-document with a random delimiter) and
    ``args``."""
    token = f"AW_{secrets.token_hex(6)}"
    quoted = " ".join(shlex.quote(a) for a in args)
    return f"{python} - {quoted} <<'{token}'\n{source}\n{token}"


def bash_command(arguments: dict[str, Any]) -> str:
    """The command line of a ``bash`` call.

    Raises:
        ToolError: ``command`` is missing, not a string, empty or holds a NUL character.
    """
    unknown_arguments(arguments, {"command"}, "bash")
    command = arguments.get("command")
    if not isinstance(command, str) or not command.strip() or "\x00" in command:
        raise ToolError('Error: bash needs "command", a non-empty string without NUL characters')
    return command


def editor_command(arguments: dict[str, Any]) -> str:
    """The sandbox command of a ``str_replace_editor`` call (the editor script checks the
    arguments' values and answers with SWE-agent's messages).

    Raises:
        ToolError: an unknown argument.
    """
    unknown_arguments(arguments, {"command", "path", "file_text", "old_str", "new_str", "insert_line",
                         "view_range"}, "str_replace_editor")
    return script(EDITOR, [json.dumps(arguments, ensure_ascii=False)])


def tests_argument(arguments: dict[str, Any]) -> list[str]:
    """The test ids of a ``run_tests`` call (``[]``: the whole suite).

    Raises:
        ToolError: an unknown argument, or ``tests`` is not a list of dotted test ids.
    """
    unknown_arguments(arguments, {"tests"}, "run_tests")
    tests = arguments.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, str) and _TEST_ID.match(t)
                                              for t in tests):
        raise ToolError('Error: run_tests: "tests" must be a list of test ids such as '
                        "tests.test_stats.MeanTests.test_mean (or tests/test_stats.py::test_mean "
                        "with pytest)")
    return tests


def tests_command(tests: list[str]) -> str:
    """Run the workspace's suite (or ``tests``) in the repository root, in a subshell (the
    agent's directory is kept)."""
    return f"(cd ~ && {script(RUNNER, tests)}\n)"
