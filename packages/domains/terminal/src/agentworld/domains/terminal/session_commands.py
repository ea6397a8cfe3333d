"""Session commands of the random policy: state it makes, then reads back.

A mixin of :class:`agentworld.domains.terminal.random_policy.RandomPolicy`
covering the grammar agents type in real sessions (Terminal-Bench style):
shell variables, ``$(...)``, arithmetic and quoting; ``if``/``for``/``while``,
``&&``/``||`` and ``$?``; pipelines of text tools (``sort``, ``uniq``,
``cut``, ``tr``, ``awk``, ``sed``, ``seq``, ``paste``, ``diff``, ``wc``,
``head``, ``tail``, ``grep``); redirection, appends and here-strings; files
written during the episode and then read, counted, searched, moved or
deleted; ``python3 -c`` one-liners and small scripts; and the common errors
(syntax errors, division by zero, a directory given as a file, a missing
command or module, a script without execute permission).

The policy records what it created (``self.files``, ``self.dirs``,
``self.vars``, ``self.made``) and reads it back in later steps, so the real
output of those steps depends on what earlier steps of the same episode wrote.
"""

from __future__ import annotations

import posixpath
import random
from collections.abc import Callable

from agentworld.domains.terminal import vocab
from agentworld.domains.terminal.policy_base import quote, rel
from agentworld.domains.terminal.session_tasks import VAR_NAMES

_ERRORS = [
    "echo $((5 / 0))",
    "python3 -c 'print(1/0)'",
    "python3 -c 'import numpyy'",
    "python3 -c 'print(undefined_name)'",
    "if true; then echo ok fi",
    "for i in 1 2 3; do echo $i",
    "echo 'unclosed",
    "awk '{print $1' /dev/null",
    "sed 's/a/b' /dev/null",
    "seq x",
    "expr 3 +",
    "cut -f1",
    "sort -k",
    "diff onlyone",
    "unknowncmd --help",
    "python3 missing_script.py",
    "./missing.sh",
    "test 3 -gt; echo $?",
    "[ 1 -eq a ]",
]


class SessionCommandsMixin:
    """Session command makers; needs the attributes of :class:`RandomPolicy`."""

    rng: random.Random
    files: dict[str, str]
    dirs: set[str]
    vars: dict[str, str]
    made: list[str]
    _file: Callable[[], str | None]
    _dir: Callable[[], str | None]
    _word: Callable[[], str]
    _new_path: Callable[[str | None], str]

    def session_makers(self) -> list[tuple[float, Callable[[str], str]]]:
        """(weight, maker) pairs; each maker takes the absolute cwd and returns a command."""
        return [
            (3, self._variables),
            (2.5, self._control),
            (3, self._text_pipeline),
            (3, self._write_file),
            (3, self._read_made),
            (1.5, self._python),
            (1, self._session_error),
        ]

    # -- helpers -----------------------------------------------------------------
    def _made_or_any(self) -> str | None:
        made = [p for p in self.made if p in self.files]
        if made and self.rng.random() < 0.7:
            return self.rng.choice(made)
        return self._file()

    def _remember(self, path: str, content: str, append: bool = False) -> None:
        self.files[path] = (self.files.get(path, "") if append else "") + content
        if path not in self.made:
            self.made.append(path)

    def _fresh_path(self, ext: str | None) -> str:
        for _ in range(20):
            path = self._new_path(ext)
            if path not in self.files and path not in self.dirs:
                return path
        return self._new_path(ext)

    # -- makers ------------------------------------------------------------------
    def follow_up(self, cwd: str) -> str | None:
        """A command that reads back state made earlier in the episode (a shell variable,
        a file written by the policy), drawn before the ordinary choice; ``None``: none now."""
        r = self.rng.random()
        if self.vars and r < 0.2:
            return self._use_variable(cwd)
        if any(p in self.files for p in self.made) and r < 0.4:
            return self._read_made(cwd)
        return None

    def _variables(self, cwd: str) -> str:
        if self.vars and self.rng.random() < 0.5:
            return self._use_variable(cwd)
        return self._set_variable(cwd)

    def _use_variable(self, cwd: str) -> str:
        rng = self.rng
        name = rng.choice(sorted(self.vars))
        others = [v for v in sorted(self.vars) if v != name]
        value = self.vars[name]
        if value.isdigit() and others and self.vars[others[0]].isdigit():
            other = others[0]
            op = rng.choice(["+", "-", "*", "/", "%"])
            return rng.choice(
                [
                    f"echo $(({name} {op} {other}))",
                    f"echo $((${name} {op} ${other}))",
                    f'echo "{name} {op} {other} = $(({name} {op} {other}))"',
                    f"expr ${name} + ${other}",
                ]
            )
        if value.isdigit():
            k = rng.randint(2, 9)
            if rng.random() < 0.5:
                op = rng.choice(["+", "-", "*", "/", "%"])
                return f"echo $(({name} {op} {k}))"
            self.vars[name] = str(int(value) + k)
            return rng.choice(
                [f"{name}=$(({name} + {k})); echo ${name}", f"let {name}+={k}; echo ${name}"]
            )
        return rng.choice(
            [f"echo ${name}", f'echo "value: ${name}"', f"echo '${name}'",
             f"echo ${{#{name}}}", f'echo "${{{name}}}s"']
        )

    def _set_variable(self, cwd: str) -> str:
        rng = self.rng
        name = rng.choice([v for v in VAR_NAMES if v not in self.vars] or list(VAR_NAMES))
        kind = rng.randrange(5)
        f = self._made_or_any()
        if kind <= 1 or f is None:
            value = str(rng.randint(1, 99))
            self.vars[name] = value
            return f"{name}={value}"
        if kind == 2:
            word = rng.choice(vocab.WORDS + vocab.PLACES)
            self.vars[name] = word
            return f"{name}={word}" if rng.random() < 0.5 else f'{name}="{word}"; echo ${name}'
        p = rel(f, cwd)
        self.vars[name] = str(self.files.get(f, "").count("\n"))
        return rng.choice(
            [f"{name}=$(wc -l < {p}); echo ${name}", f"{name}=$(cat {p} | wc -l)",
             f'{name}=$(grep -c . {p}); echo "lines: ${name}"']
        )

    def _control(self, cwd: str) -> str:
        rng, f = self.rng, self._made_or_any()
        p = rel(f, cwd) if f else "missing.txt"
        n = rng.randint(2, 5)
        word = self._word()
        return rng.choice(
            [
                f"for i in $(seq 1 {n}); do echo line $i; done",
                f"for i in {{1..{n}}}; do echo $((i * i)); done",
                f'for w in {" ".join(rng.sample(vocab.WORDS, n))}; do echo "$w"; done | sort',
                "for f in *; do echo $f; done",
                f'i=0; while [ $i -lt {n} ]; do i=$((i + 1)); done; echo $i',
                f"if [ -f {p} ]; then echo exists; else echo missing; fi",
                f"if [ -d {rel(self._dir() or 'tmp', cwd)} ]; then echo dir; fi",
                f"grep -q {word} {p} && echo found || echo not found",
                f"test -e {p}; echo $?",
                f"ls {p} > /dev/null 2>&1; echo $?",
                "true && echo ok",
                "false || echo failed",
                "false; echo $?",
                f"[ {n} -gt 3 ] && echo big || echo small",
                f"while read line; do echo \"> $line\"; done < {p}",
                f'case {word} in a*) echo starts with a;; *) echo other;; esac',
            ]
        )

    def _text_pipeline(self, cwd: str) -> str:
        rng, f = self.rng, self._made_or_any()
        n = rng.randint(2, 6)
        if f is None:
            return f"seq {n}"
        p = rel(f, cwd)
        return rng.choice(
            [
                f"sort {p} | uniq -c",
                f"sort {p} | uniq | wc -l",
                f"cut -d' ' -f1 {p} | sort | uniq -c | sort -rn",
                f"tr ' ' '\\n' < {p} | sort | uniq -c | sort -rn | head -3",
                f"awk '{{print NR\": \"$1}}' {p}",
                f"awk '{{print NF}}' {p}",
                f"awk -F, '{{print $1}}' {p}",
                f"sed -n '1p' {p}",
                f"sed 's/ /_/g' {p}",
                f"sed '1d' {p}",
                f"head -n 2 {p} | tail -n 1",
                f"tr a-z A-Z < {p}",
                f"tr -d ' ' < {p} | head -2",
                f"cat {p} | wc -w",
                f"grep -v '^$' {p} | wc -l",
                f"grep -o '[0-9]*' {p} | head -3",
                f"seq {n} | paste -sd+ | bc",
                f"seq {n} | paste -sd,",
                f"seq 1 {n} | awk '{{s += $1}} END {{print s}}'",
                f"paste -d: {p} {p} | head -2",
                f"sort -r {p} | head -1",
                f"cut -c1-5 {p} | sort -u",
                f"wc -c < {p}",
                f"rev {p} | head -2",
                f"nl -ba {p} | tail -2",
            ]
        )

    def _write_file(self, cwd: str) -> str:
        rng = self.rng
        kind = rng.randrange(7)
        f = [p for p in self.made if p in self.files]
        if kind == 0 and f:
            path = rng.choice(f)
            text = vocab.random_text(rng)
            self._remember(path, text + "\n", append=True)
            return f"echo {quote(text)} >> {rel(path, cwd)}"
        path = self._fresh_path(rng.choice(["txt", "txt", "md", "log", "csv"]))
        p = rel(path, cwd)
        if kind <= 1:
            text = vocab.random_text(rng)
            self._remember(path, text + "\n")
            return f"echo {quote(text)} > {p}"
        if kind == 2:
            n = rng.randint(2, 6)
            self._remember(path, "".join(f"{i}\n" for i in range(1, n + 1)))
            return f"seq {n} > {p}"
        if kind == 3:
            lines = [vocab.random_text(rng) for _ in range(rng.randint(2, 4))]
            self._remember(path, "".join(x + "\n" for x in lines))
            return f"printf '%s\\n' {' '.join(quote(x) for x in lines)} > {p}"
        if kind == 4:
            words = rng.sample(vocab.WORDS, rng.randint(3, 5))
            self._remember(path, "".join(sorted(words)) + "\n")
            return f"echo {' '.join(words)} | tr ' ' '\\n' | sort > {p}"
        if kind == 5:
            src = self._file()
            if src is None:
                return f"touch {p}"
            self._remember(path, self.files[src])
            return rng.choice([f"cat {rel(src, cwd)} > {p}", f"sort {rel(src, cwd)} > {p}",
                               f"head -n 2 {rel(src, cwd)} > {p}"])
        text = vocab.random_text(rng)
        self._remember(path, text + "\n")
        return f"cat > {p} <<< {quote(text)}"

    def _read_made(self, cwd: str) -> str:
        rng = self.rng
        made = [p for p in self.made if p in self.files]
        if not made:
            return self._write_file(cwd)
        path = rng.choice(made)
        p = rel(path, cwd)
        kind = rng.randrange(10)
        if kind == 6:
            dst = self._fresh_path(posixpath.splitext(path)[1][1:] or None)
            self.files[dst] = self.files.pop(path)
            self.made.append(dst)
            return f"mv {p} {rel(dst, cwd)}" + (" && ls" if rng.random() < 0.3 else "")
        if kind == 7:
            self.files.pop(path)
            return f"rm {p}" + (f" && ls {rel(posixpath.dirname(path) or '.', cwd)}"
                                if rng.random() < 0.4 else "")
        if kind == 8:
            d = posixpath.dirname(path) or "."
            return rng.choice([f"ls {rel(d, cwd)}", f"ls -l {p}", f"find . -name {quote(posixpath.basename(path))}"])
        return rng.choice(
            [f"cat {p}", f"cat {p}", f"wc -l {p}", f"head -n 1 {p}", f"tail -n 1 {p}",
             f"grep -n {self._word()} {p}", f"cat -n {p}", f"sort {p}", f"wc -w < {p}"]
        )

    def _python(self, cwd: str) -> str:
        rng = self.rng
        n = rng.randint(2, 20)
        word = rng.choice(vocab.WORDS)
        f = self._made_or_any()
        scripts = [p for p in self.made if p.endswith(".py") and p in self.files]
        if scripts and rng.random() < 0.6:
            return f"python3 {rel(rng.choice(scripts), cwd)}"
        if rng.random() < 0.35:
            path = self._fresh_path("py")
            code = rng.choice(
                [f"print(sum(range({n})))", f"print('{word}' * 2)",
                 f"for i in range({min(n, 5)}): print(i)", f"print(len('{word}'))"]
            )
            self._remember(path, code + "\n")
            return f'echo "{code}" > {rel(path, cwd)}'
        options = [
            f"python3 -c 'print({n} * {rng.randint(2, 9)})'",
            f"python3 -c 'print(\"{word}\".upper())'",
            f"python3 -c 'print(list(range({min(n, 6)})))'",
            f"python3 -c 'import math; print(math.sqrt({n * n}))'",
            f"python3 -c 'print(len(\"{word}\"))'",
            f"python3 -c 'print(sorted([{n}, 3, 11, 7]))'",
            "python3 --version",
            f"echo {n} | python3 -c 'import sys; print(int(sys.stdin.read()) + 1)'",
        ]
        if f:
            p = rel(f, cwd)
            options += [
                f"python3 -c 'print(open(\"{p}\").read().count(\"\\n\"))'",
                f"python3 -c 'print(open(\"{p}\").readline().strip())'",
            ]
        return rng.choice(options)

    def _session_error(self, cwd: str) -> str:
        rng = self.rng
        d = self._dir()
        options = list(_ERRORS)
        if d:
            options += [f"cat {rel(d, cwd)}", f"rmdir {rel(d, cwd)}", f"mkdir {rel(d, cwd)}"]
        f = self._made_or_any()
        if f:
            options += [f"cd {rel(f, cwd)}", f"./{rel(f, cwd)}", f"{rel(f, cwd)}",
                        f"mkdir {rel(f, cwd)}"]
        return rng.choice(options)
