"""A server's command line read as the shell and ``env`` would run it: the settings of a leading
``env`` (GNU coreutils ``env [OPTION]... [NAME=VALUE]... COMMAND [ARG]...``) apart from the
server's own program and arguments.

``env ALLOW_COMMANDS=ls,cat -C /srv/files mcp-shell-server`` starts ``mcp-shell-server`` with
a variable set, in ``/srv/files``: its name is ``mcp-shell-server`` (not ``env``), the folder
is where its files are and the variable's values are values its tools may take.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

_ENV_VALUED = {"-u": "unset", "--unset": "unset", "-C": "chdir", "--chdir": "chdir",
               "-S": "split", "--split-string": "split"}


@dataclass(frozen=True)
class CommandLine:
    """One server command line, split.

    Attributes:
        program: The server's argv (its program first); ``[]`` for an empty line.
        variables: ``NAME=VALUE`` settings an ``env`` wrapper gives, in order.
        chdir: The folder ``env -C DIR`` / ``--chdir=DIR`` starts it in, else ``None``.
    """

    program: list[str]
    variables: dict[str, str] = field(default_factory=dict)
    chdir: str | None = None


def split_command(server: str) -> CommandLine:
    """:class:`CommandLine` of ``server``, split as a POSIX shell does (``shlex``; a bad quote:
    on whitespace). A leading ``env`` (or ``/usr/bin/env``) with its options (``-i``, ``-u
    NAME``, ``-C DIR``, ``--chdir=DIR``, ...) and ``NAME=VALUE`` words is the wrapper; the
    first other word is the program; ``env -S STRING`` reads ``STRING``'s words as its own."""
    try:
        argv = shlex.split(server)
    except ValueError:
        argv = server.split()
    variables: dict[str, str] = {}
    chdir: str | None = None
    i, in_env, options = 0, False, False
    while i < len(argv):
        word = argv[i]
        if in_env and _assignment(word):
            name, value = word.split("=", 1)
            variables[name] = value
            options = False  # env reads its options before the settings only
        elif not in_env and word.rsplit("/", 1)[-1] == "env" and i + 1 < len(argv):
            in_env = options = True
        elif options and word == "--":
            options = False  # settings, then the program, follow
        elif options and word.startswith("-") and word != "-":
            option, _, inline = word.partition("=")
            kind = _ENV_VALUED.get(option)
            if kind is not None:
                value = inline if inline else argv[i + 1] if i + 1 < len(argv) else ""
                i += 0 if inline else 1
                if kind == "chdir":
                    chdir = value or None
                elif kind == "split":  # `env -S 'A=1 prog --x'`: its words, then the rest
                    inner = split_command(f"env {value}")
                    return CommandLine(program=inner.program + argv[i + 1:],
                                       variables={**variables, **inner.variables},
                                       chdir=inner.chdir or chdir)
        elif options and word == "-":
            pass  # `env -`: an empty environment
        else:
            break
        i += 1
    return CommandLine(program=argv[i:], variables=variables, chdir=chdir)


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier() and not word.startswith("-")
