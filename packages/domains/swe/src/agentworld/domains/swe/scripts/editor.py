"""The ``str_replace_editor`` tool, run with python3 inside the sandbox (stdlib only).

``python3 - ARGS_JSON``: one call ``{"command", "path", ...}``; prints the observation. The
commands, arguments and messages are those of SWE-agent's ``str_replace_editor``
(``tools/edit_anthropic``, after Anthropic's text editor tool): ``view`` (``cat -n`` of a file,
optionally ``view_range`` [start, end] with end -1 for the last line, or the files up to 2
levels deep of a directory, hidden items excluded), ``create`` (``file_text``; never
overwrites), ``str_replace`` (``old_str`` must occur exactly once; ``new_str`` default ""),
``insert`` (``new_str`` after line ``insert_line``, 0 = at the top). An edit's observation is
the standard confirmation followed by the unified diff of the change (3 lines of context).
"""
import difflib
import json
import os
import sys

COMMANDS = ("view", "create", "str_replace", "insert")


def numbered(lines, first):
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, first))


def listing(path):
    out = [path]
    for name in sorted(os.listdir(path)):
        if name.startswith("."):
            continue
        full = os.path.join(path, name)
        out.append(full)
        if os.path.isdir(full) and not os.path.islink(full):
            out += [os.path.join(full, n) for n in sorted(os.listdir(full)) if not n.startswith(".")]
    return "\n".join(out)


def diff(path, old, new):
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), path, path)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip("\n")


def edited(path, old, new):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(new)
    return (f"The file {path} has been edited. Here's the diff of the change:\n{diff(path, old, new)}\n"
            "Review the changes and make sure they are as expected. Edit the file again if necessary.")


def run(call):
    command, path = call.get("command"), call.get("path")
    if command not in COMMANDS:
        return (f"Unrecognized command {command}. The allowed commands for the str_replace_editor "
                f"tool are: {', '.join(COMMANDS)}")
    if not isinstance(path, str) or not path:
        return f"Parameter `path` is required for command: {command}"
    if not path.startswith("/"):
        return (f"The path {path} is not an absolute path, it should start with `/`. Maybe you "
                f"meant {os.path.join(os.getcwd(), path)}?")
    if command == "create":
        if os.path.exists(path):
            return f"File already exists at: {path}. Cannot overwrite files using command `create`."
        text = call.get("file_text")
        if not isinstance(text, str):
            return "Parameter `file_text` is required for command: create"
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return f"File created successfully at: {path}"
    if not os.path.exists(path):
        return f"The path {path} does not exist. Please provide a valid path."
    if os.path.isdir(path):
        if command != "view":
            return f"The path {path} is a directory and only the `view` command can be used on directories"
        return (f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden "
                f"items:\n{listing(path)}\n")
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read().expandtabs()
    lines = text.split("\n")
    if command == "view":
        rng = call.get("view_range")
        if rng is None:
            return f"Here's the result of running `cat -n` on {path}:\n{numbered(lines, 1)}\n"
        if (not isinstance(rng, list) or len(rng) != 2 or not all(type(v) is int for v in rng)
                or not 1 <= rng[0] <= len(lines) or (rng[1] != -1 and not rng[0] <= rng[1] <= len(lines))):
            return (f"Invalid `view_range`: {rng}. It should be a list of two integers [start, end] "
                    f"with 1 <= start <= end <= {len(lines)} (end -1: the last line)")
        end = len(lines) if rng[1] == -1 else rng[1]
        return (f"Here's the result of running `cat -n` on {path}:\n"
                f"{numbered(lines[rng[0] - 1:end], rng[0])}\n")
    new_str = call.get("new_str", "")
    if not isinstance(new_str, str):
        return f"Parameter `new_str` must be a string for command: {command}"
    if command == "str_replace":
        old_str = call.get("old_str")
        if not isinstance(old_str, str) or not old_str:
            return "Parameter `old_str` is required for command: str_replace"
        count = text.count(old_str)
        if count == 0:
            return (f"No replacement was performed, old_str `{old_str}` did not appear verbatim "
                    f"in {path}.")
        if count > 1:
            at = [i + 1 for i, line in enumerate(lines) if old_str.split("\n")[0] in line]
            return (f"No replacement was performed. Multiple occurrences of old_str `{old_str}` "
                    f"in lines {at}. Please ensure it is unique")
        return edited(path, text, text.replace(old_str, new_str))
    line = call.get("insert_line")
    if type(line) is not int or not 0 <= line <= len(lines):
        return (f"Invalid `insert_line` parameter: {line}. It should be within the range of lines "
                f"of the file: [0, {len(lines)}]")
    new_lines = lines[:line] + new_str.split("\n") + lines[line:]
    return edited(path, text, "\n".join(new_lines))


if __name__ == "__main__":
    try:
        print(run(json.loads(sys.argv[1])))
    except OSError as error:
        print(f"Error: {error.strerror}: {error.filename}")
