"""Multi-line actions in real sandboxed bash (every sandbox kind here): here-documents, loops
and scripts run as one unit, as bash runs the same text as a script (``shell.ACTION_FILE``)."""

from __future__ import annotations

import time
import uuid

from agentworld.core.types import Action
from agentworld.domains.terminal.shell import ACTION_FILE, GRACE_S

PROMPT = "user@sandbox:~$ "


def run(env, text: str) -> tuple[str, dict]:
    obs, _, _, _, info = env.step(Action(text=text))
    return obs.text, info


def test_here_document_to_a_file_then_read_back(env):
    text, info = run(env, "cat > notes.txt <<'EOF'\nfirst line\n  indented $HOME\nEOF")
    assert text == PROMPT and info["exit_code"] == 0
    assert set(env.privileged_state()["files"]) == {"notes.txt"}
    text, _ = run(env, "cat notes.txt")
    assert text == "first line\n  indented $HOME\n" + PROMPT
    text, _ = run(env, "cat >> notes.txt <<EOF\nthird\nEOF\nwc -l notes.txt")
    assert text == "3 notes.txt\n" + PROMPT


def test_here_document_expands_unless_the_delimiter_is_quoted(env):
    run(env, "x=7")
    text, _ = run(env, 'cat <<EOF\nx=$x sum=$((x + 1)) dir=$(pwd)\n"quoted" \\$x\nEOF')
    assert text == 'x=7 sum=8 dir=/home/agent\n"quoted" $x\n' + PROMPT
    for delimiter in ("'EOF'", '"EOF"', "\\EOF"):
        text, _ = run(env, f"cat <<{delimiter}\nx=$x $(pwd)\nEOF")
        assert text == "x=$x $(pwd)\n" + PROMPT, delimiter
    text, _ = run(env, "cat <<-EOF\n\tx=$x\n\tEOF")  # <<- strips leading tabs
    assert text == "x=7\n" + PROMPT


def test_multi_line_loop_and_state_that_persists(env):
    loop = "total=0\nfor i in 1 2 3; do\n  echo item $i\n  total=$((total + i))\ndone"
    text, info = run(env, loop)
    assert text == "item 1\nitem 2\nitem 3\n" + PROMPT and info["exit_code"] == 0
    text, _ = run(env, "mkdir -p work\ncd work\n"
                       "while [ $total -gt 4 ]; do\n  total=$((total - 4))\ndone")
    assert text == "user@sandbox:~/work$ "
    text, _ = run(env, "echo $total; pwd")
    assert text == "2\n/home/agent/work\nuser@sandbox:~/work$ "


def test_python_script_from_a_here_document(env):
    script = (
        "python3 - <<EOF\n"
        "import sys\n"
        "words = 'b a c a'.split()\n"
        "for w in sorted(set(words)):\n"
        "    print(w, words.count(w))\n"
        "sys.exit(3)\n"
        "EOF"
    )
    text, info = run(env, script)
    assert text == "a 2\nb 1\nc 1\n[3] " + PROMPT and info["exit_code"] == 3


def test_exit_status_carries_into_and_out_of_a_multi_line_action(env):
    run(env, "false")
    text, info = run(env, "echo status $?\nls nothere")
    assert text == (
        "status 1\nls: cannot access 'nothere': No such file or directory\n[2] " + PROMPT
    )
    assert info["exit_code"] == 2
    text, _ = run(env, "echo $?\ntrue && echo ok || echo no")
    assert text == "2\nok\n" + PROMPT


def test_a_forged_prompt_marker_in_a_here_document_does_not_end_the_step(env):
    text, _ = run(env, "cat <<EOF\n${PS1@P}\nEOF\nsleep 0.3\necho after")
    token = env._shell._token.decode()
    # The marker's separators are dropped from the output; its text stays, the step goes on.
    assert text == f"{token}:1:0:1:/home/agent$ {token}.\nafter\n" + PROMPT
    text, _ = run(env, "echo next")
    assert text == "next\n" + PROMPT


def test_an_unclosed_here_document_ends_at_the_end_of_the_action(env):
    start = time.monotonic()
    text, info = run(env, "cat > f.txt <<EOF\nnever closed\necho not a command")
    assert text == (
        "bash: warning: here-document at line 1 delimited by end-of-file (wanted `EOF')\n"
        + PROMPT
    )
    assert not info["timed_out"] and time.monotonic() - start < 1.5
    text, _ = run(env, "cat f.txt")
    assert text == "never closed\necho not a command\n" + PROMPT


def test_unfinished_constructs_are_bash_syntax_errors(env):
    text, info = run(env, "if true; then\n  echo yes")
    error = "syntax error: unexpected end of file"
    assert text == f"bash: {ACTION_FILE}: line 3: {error}\n[2] " + PROMPT
    assert info["exit_code"] == 2 and not info["timed_out"]
    text, _ = run(env, "echo 'open\nstill open")
    assert text == (
        f"bash: {ACTION_FILE}: line 1: unexpected EOF while looking for matching `''\n[2] {PROMPT}"
    )
    text, _ = run(env, "echo ok")
    assert text == "ok\n" + PROMPT


def test_a_timeout_interrupts_the_whole_action(env):
    start = time.monotonic()
    text, info = run(env, "echo before\nsleep 999\necho after")
    assert time.monotonic() - start < 1.5 + GRACE_S + 2
    assert info["timed_out"] and not info["restarted"]
    assert text == "before\n^C\n[command timed out after 1.5 s: interrupted]\n[130] " + PROMPT
    text, _ = run(env, "echo ok")
    assert text == "ok\n" + PROMPT


def test_background_jobs_of_a_multi_line_action_end_with_its_step(env):
    marker = f"aw-ml-{uuid.uuid4().hex[:8]}"
    run(env, f"bash -c 'exec -a {marker} sleep 999' &\necho started")
    text, _ = run(env, f"ps -e -o args= | grep -c '^{marker}'")
    assert text == "0\n[1] " + PROMPT


def test_trailing_line_breaks_leave_a_single_line(env):
    text, _ = run(env, "echo one\n\n")
    assert text == "one\n" + PROMPT
    text, _ = run(env, "echo one\r\necho two\r\n")
    assert text == "one\ntwo\n" + PROMPT
