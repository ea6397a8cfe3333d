"""Multi-line commands of the random policy: here-documents, multi-line loops and scripts.

A mixin of :class:`agentworld.domains.terminal.random_policy.RandomPolicy`. Agents send
these as one action of several lines (Terminal-Bench trajectories write files and run
programs this way), and the terminal runs such an action as one unit
(:mod:`agentworld.domains.terminal.shell`): here-documents quoted (``<<'EOF'``, kept as
written) or not (``<<EOF``, variables and ``$(...)`` expanded), ``<<-`` with tabs, files
written or appended and later read back, ``python3 - <<EOF`` programs, scripts written with
a here-document and then run, ``for``/``while``/``if`` over several lines, a here-document
fed to a text tool or a ``while read`` loop, and one never closed (bash's warning).

Files it writes are recorded in ``self.files``/``self.made`` with the content bash gives
them, so later steps read them back (:class:`SessionCommandsMixin` ``_read_made``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from agentworld.domains.terminal import vocab
from agentworld.domains.terminal.policy_base import rel


class MultilineCommandsMixin:
    """The ``_multiline`` maker; needs the attributes of :class:`RandomPolicy`."""

    rng: random.Random
    files: dict[str, str]
    vars: dict[str, str]
    made: list[str]
    _made_or_any: Callable[[], str | None]
    _fresh_path: Callable[[str | None], str]
    _remember: Callable[..., None]

    def _multiline(self, cwd: str) -> str:
        """One multi-line action (a command of several lines) for the absolute ``cwd``."""
        makers = [self._heredoc_file, self._heredoc_file, self._heredoc_input,
                  self._multiline_control, self._heredoc_python]
        if self.rng.random() < 0.04:
            return "cat <<EOF\n" + vocab.random_text(self.rng)  # never closed
        return self.rng.choice(makers)(cwd)

    def _heredoc_file(self, cwd: str) -> str:
        rng = self.rng
        made = [p for p in self._made_list() if not p.endswith((".py", ".sh"))]
        append = bool(made) and rng.random() < 0.3
        path = rng.choice(made) if append else self._fresh_path(rng.choice(["txt", "md", "conf"]))
        lines = [vocab.random_text(rng) for _ in range(rng.randint(1, 4))]
        numeric = sorted(k for k, v in self.vars.items() if v.lstrip("-").isdigit())
        if numeric and rng.random() < 0.5:  # expanded: the file holds the value
            name = rng.choice(numeric)
            k = rng.randint(2, 5)
            lines.append(f"{name}=${name} next=$(({name} + {k}))")
            written = lines[:-1] + [f"{name}={self.vars[name]} next={int(self.vars[name]) + k}"]
            opener = "EOF"
        elif rng.random() < 0.3:  # quoted: kept as written
            lines.append(rng.choice(["home=$HOME", "total: $((1 + 2))", "run $(date)"]))
            written, opener = list(lines), rng.choice(["'EOF'", '"EOF"', "\\EOF"])
        else:
            written, opener = list(lines), rng.choice(["EOF", "'EOF'", "END"])
        end = opener.strip("'\"\\")
        self._remember(path, "".join(x + "\n" for x in written), append=append)
        p = rel(path, cwd)
        text = f"cat {'>>' if append else '>'} {p} <<{opener}\n" + "\n".join(lines) + f"\n{end}"
        if rng.random() < 0.3:
            text += rng.choice([f"\ncat {p}", f"\nwc -l {p}", f"\ntail -n 1 {p}"])
        return text

    def _heredoc_input(self, cwd: str) -> str:
        rng = self.rng
        words = rng.sample(vocab.WORDS, rng.randint(3, 5))
        pairs = "\n".join(f"{w} {rng.randint(1, 30)}" for w in words)
        body = "\n".join(words)
        return rng.choice(
            [
                f"sort <<EOF\n{body}\nEOF",
                f"sort -r <<'EOF' | head -n 2\n{body}\nEOF",
                f"wc -l <<EOF\n{body}\nEOF",
                f"tr a-z A-Z <<EOF\n{body}\nEOF",
                f"grep -c a <<EOF\n{body}\nEOF",
                f"awk '{{s += $2}} END {{print s}}' <<EOF\n{pairs}\nEOF",
                f'while read name n; do\n  echo "$n $name"\ndone <<EOF\n{pairs}\nEOF',
                f"cat <<-EOF\n\t{words[0]}\n\t\t{words[1]}\n\tEOF",
            ]
        )

    def _multiline_control(self, cwd: str) -> str:
        rng = self.rng
        n = rng.randint(2, 5)
        f = self._made_or_any()
        p = rel(f, cwd) if f else "missing.txt"
        return rng.choice(
            [
                f"for i in $(seq 1 {n}); do\n  echo \"step $i\"\ndone",
                f"total=0\nfor i in {' '.join(str(i) for i in range(1, n + 1))}; do\n"
                "  total=$((total + i))\ndone\necho $total",
                f"i={n}\nwhile [ $i -gt 0 ]; do\n  echo $i\n  i=$((i - 1))\ndone",
                f"if [ -f {p} ]; then\n  echo found\n  wc -l < {p}\nelse\n  echo missing\nfi",
                "for f in *; do\n  if [ -d \"$f\" ]; then\n    echo \"dir $f\"\n  fi\ndone",
                f"count=0\nwhile read line; do\n  count=$((count + 1))\ndone < {p}\n"
                "echo $count",
            ]
        )

    def _heredoc_python(self, cwd: str) -> str:
        rng = self.rng
        n = rng.randint(2, 9)
        word = rng.choice(vocab.WORDS)
        body = rng.choice(
            [
                f"for i in range({n}):\n    print(i, i * i)",
                f"words = '{word} {word} x'.split()\nprint(len(words), words.count('{word}'))",
                f"import json\nprint(json.dumps({{'{word}': {n}}}))",
                f"def f(x):\n    return x * {n}\n\nprint(f(3))",
                f"import sys\nprint('{word}')\nsys.exit({n % 3})",
            ]
        )
        if rng.random() < 0.35:  # a script file written with a here-document, then run
            path = self._fresh_path("py")
            self._remember(path, body + "\n")
            p = rel(path, cwd)
            run = f"\npython3 {p}" if rng.random() < 0.5 else ""
            return f"cat > {p} <<'EOF'\n{body}\nEOF{run}"
        end = rng.choice(["EOF", "PY"])
        opener = f"'{end}'" if rng.random() < 0.5 else end
        return f"python3 - <<{opener}\n{body}\n{end}"

    def _made_list(self) -> list[str]:
        return [p for p in self.made if p in self.files]
