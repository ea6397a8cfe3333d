"""The random policy: plausible shell commands drawn from a weighted vocabulary.

Most commands name files and directories that exist (from the task's set-up
tree, updated with what the policy itself created, moved or deleted, and
written relative to the current directory read from the last prompt); about
one in eight is a mistake a person makes: a typo (``lss``), a missing file,
an unknown option. About half the commands are session commands
(:mod:`agentworld.domains.terminal.session_commands`): variables, control
flow, pipelines, files written then read back, ``python3``, and their errors;
some are multi-line actions (:mod:`agentworld.domains.terminal.multiline_commands`):
here-documents, loops over several lines, ``python3 - <<EOF`` programs.
Episodes last 4-12 steps (drawn per episode).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal import vocab
from agentworld.domains.terminal.multiline_commands import MultilineCommandsMixin
from agentworld.domains.terminal.policy_base import (
    SeededPolicy,
    current_cwd,
    quote,
    rel,
    steps_taken,
)
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.session_commands import SessionCommandsMixin

_TYPOS = [
    "lss",
    "sl",
    "cta",
    "grpe",
    "mkdri",
    "pwdd",
    "cd..",
    "ehco hello",
    "touhc",
    "wcc -l",
    "claer",
    "mvv",
    "rn",
    "gerp -r",
]
_BAD_OPTIONS = [
    "ls --colour=sometimes",
    "ls -j",
    "cat -z",
    "wc --lines=x",
    "head -n",
    "mkdir",
    "cp",
    "mv onlyone",
    "grep",
    "rm",
    "sort --bogus",
    "cd /nonexistent",
]


class RandomPolicy(SessionCommandsMixin, MultilineCommandsMixin, SeededPolicy):
    """Random but realistic shell commands (``name = "random"``).

    Args:
        seed: Seed of the policy's random choices; ``reset(seed)`` re-seeds.
        min_steps: Shortest episode, actions.
        max_steps: Longest episode, actions.
    """

    name = "random"

    def __init__(self, seed: int = 0, min_steps: int = 4, max_steps: int = 12) -> None:
        super().__init__(seed)
        self.min_steps, self.max_steps = min_steps, max_steps
        self._length = 0
        self.files: dict[str, str] = {}
        self.dirs: set[str] = set()
        self.vars: dict[str, str] = {}
        self.made: list[str] = []

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random command, or ``None`` once this episode's length is reached."""
        i = steps_taken(history)
        if i == 0:
            self._length = self.rng.randint(self.min_steps, self.max_steps)
            setup = task.setup if task else {}
            self.files = dict(setup.get("files") or {})
            self.dirs = set(setup.get("dirs") or [])
            self.vars, self.made = {}, []
        if i >= self._length:
            return None
        cwd = current_cwd(history)
        if self.rng.random() < 0.12:
            return Action(text=self._mistake(cwd))
        follow = self.follow_up(cwd)
        if follow is not None:
            return Action(text=follow)
        makers = self._makers()
        weights = [w for w, _ in makers]
        make = self.rng.choices([m for _, m in makers], weights=weights)[0]
        return Action(text=make(cwd))

    # -- choices ---------------------------------------------------------------
    def _file(self) -> str | None:
        return self.rng.choice(sorted(self.files)) if self.files else None

    def _dir(self) -> str | None:
        return self.rng.choice(sorted(self.dirs)) if self.dirs else None

    def _word(self) -> str:
        f = self._file()
        words = re.findall(r"[A-Za-z]{3,}", self.files[f]) if f else []
        return (
            self.rng.choice(words)
            if words and self.rng.random() < 0.85
            else self.rng.choice(vocab.WORDS)
        )

    def _new_path(self, ext: str | None) -> str:
        parent = self.rng.choice(["", "", *sorted(self.dirs)])
        stem = self.rng.choice(vocab.STEMS + vocab.DIRS)
        return posixpath.join(parent, f"{stem}.{ext}" if ext else stem)

    def _makers(self) -> list[tuple[float, Callable[[str], str]]]:
        return [
            (6, self._look),
            (4, self._read),
            (2, self._search),
            (2, self._count),
            (2, self._move_around),
            (2, self._create),
            (1.5, self._modify),
            (1, self._transform),
            *self.session_makers(),
            (4, self._multiline),
        ]

    def _mistake(self, cwd: str) -> str:
        kind = self.rng.randrange(3)
        if kind == 0:
            return self.rng.choice(_TYPOS)
        if kind == 1:
            return self.rng.choice(_BAD_OPTIONS)
        missing = self._new_path(self.rng.choice(["txt", "md", None]))
        return f"{self.rng.choice(['cat', 'rm', 'cd', 'ls', 'head'])} {rel(missing, cwd)}"

    def _look(self, cwd: str) -> str:
        d = self._dir()
        options = ["ls", "ls -a", "ls -l", "pwd", "ls -F", "ls -R", "ls -la"]
        if d:
            options += [f"ls {rel(d, cwd)}", f"ls -l {rel(d, cwd)}", f"ls -a {rel(d, cwd)}"]
        return self.rng.choice(options)

    def _read(self, cwd: str) -> str:
        f = self._file()
        if f is None:
            return "ls"
        p, n = rel(f, cwd), self.rng.randint(1, 3)
        return self.rng.choice(
            [
                f"cat {p}",
                f"cat {p}",
                f"head -n {n} {p}",
                f"tail -n {n} {p}",
                f"head -{n} {p}",
                f"cat -n {p}",
                f"tail -1 {p}",
                f"file {p}",
            ]
        )

    def _search(self, cwd: str) -> str:
        f, w = self._file(), self._word()
        ext = posixpath.splitext(f)[1] if f else ".txt"
        options = [
            f"grep -r {w} .",
            f"grep -rl {w} .",
            f"find . -name '*{ext}'",
            "find . -type d",
            f"find . -name {quote(posixpath.basename(f) if f else 'x')}",
        ]
        if f:
            options += [
                f"grep {w} {rel(f, cwd)}",
                f"grep -n {w} {rel(f, cwd)}",
                f"grep -c {w} {rel(f, cwd)}",
                f"grep -i {w.upper()} {rel(f, cwd)}",
            ]
        return self.rng.choice(options)

    def _count(self, cwd: str) -> str:
        f, d = self._file(), self._dir()
        options = ["ls | wc -l", "find . -type f | wc -l"]
        if f:
            options += [
                f"wc -l {rel(f, cwd)}",
                f"wc -w {rel(f, cwd)}",
                f"wc {rel(f, cwd)}",
                f"cat {rel(f, cwd)} | wc -l",
            ]
        if d:
            options.append(f"ls {rel(d, cwd)} | wc -l")
        return self.rng.choice(options)

    def _move_around(self, cwd: str) -> str:
        d = self._dir()
        options = ["cd ..", "cd", "cd ~", "pwd", "cd -"] if cwd != HOME else ["pwd", "cd ~"]
        if d:
            options += [f"cd {rel(d, cwd)}"] * 3 + [f"cd {rel(d, cwd)} && ls"]
        return self.rng.choice(options)

    def _create(self, cwd: str) -> str:
        kind = self.rng.randrange(4)
        if kind == 0:
            path = self._new_path(None)
            self.dirs.add(path)
            return f"mkdir {rel(path, cwd)}"
        if kind == 1:
            path = posixpath.join(self._new_path(None), self.rng.choice(vocab.DIRS))
            self.dirs.update({posixpath.dirname(path), path})
            return f"mkdir -p {rel(path, cwd)}"
        path = self._new_path(self.rng.choice(["txt", "md", "log"]))
        if kind == 2:
            self.files.setdefault(path, "")
            return f"touch {rel(path, cwd)}"
        text = vocab.random_text(self.rng)
        self.files[path] = text + "\n"
        return f"echo {quote(text)} > {rel(path, cwd)}"

    def _modify(self, cwd: str) -> str:
        f = self._file()
        if f is None:
            return self._create(cwd)
        p, kind = rel(f, cwd), self.rng.randrange(6)
        if kind == 0:
            text = vocab.random_text(self.rng)
            self.files[f] += text + "\n"
            return f"echo {quote(text)} >> {p}"
        if kind == 1:
            return f"sed -i 's/{self._word()}/{self.rng.choice(vocab.WORDS)}/' {p}"
        if kind == 2:
            dst = self._new_path(posixpath.splitext(f)[1][1:] or None)
            self.files[dst] = self.files.pop(f)
            return f"mv {p} {rel(dst, cwd)}"
        if kind == 3:
            dst = posixpath.join(posixpath.dirname(f), "copy_" + posixpath.basename(f))
            self.files[dst] = self.files[f]
            return f"cp {p} {rel(dst, cwd)}"
        if kind == 4 and self.rng.random() < 0.5 and self.dirs:
            d = self._dir() or ""
            self.dirs = {x for x in self.dirs if x != d and not x.startswith(d + "/")}
            self.files = {k: v for k, v in self.files.items() if not k.startswith(d + "/")}
            return f"rm -r {rel(d, cwd)}"
        self.files.pop(f)
        return f"rm {p}"

    def _transform(self, cwd: str) -> str:
        f = self._file()
        if f is None:
            return "echo $HOME"
        p = rel(f, cwd)
        return self.rng.choice(
            [
                f"sort {p}",
                f"sort -r {p}",
                f"uniq {p}",
                f"sort {p} | uniq -c",
                f"tr a-z A-Z < {p}",
                f"cut -c1-10 {p}",
                f"cut -d, -f1 {p}",
                f"rev {p}",
                f"nl {p}",
                "echo $HOME",
                "whoami",
                f"basename {p}",
                f"du -h {p}",
                "echo done",
            ]
        )
