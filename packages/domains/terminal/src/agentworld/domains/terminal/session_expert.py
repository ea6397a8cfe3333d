"""Scripted solutions of the session task kinds (:mod:`agentworld.domains.terminal.session_tasks`).

A mixin of :class:`agentworld.domains.terminal.expert.ScriptedExpert`: one
``_<op>(goal, plan)`` method per goal operation, each appending commands to
the plan the way a person would type them, in one of several seeded styles
(``$((...))`` or ``expr``; ``for`` or ``while``; ``awk`` or ``cut | paste |
bc``; ``printf`` or ``echo`` and ``>>``; ``if`` or ``&&``/``||``; ...). Here-documents
and multi-line loops are typed as one multi-line action, as an agent sends them.
"""

from __future__ import annotations

import random
from posixpath import dirname
from typing import Any, Protocol

from agentworld.domains.terminal.policy_base import quote


class _PlanLike(Protocol):
    cmds: list[str]

    def p(self, path: str) -> str: ...

    def add(self, cmd: str) -> None: ...

    def cd(self, path: str) -> None: ...


class SessionExpertMixin:
    """Solutions of ``arith``, ``loop``, ``pipeline``, ``write_lines``, ``script``,
    ``condition``, ``status``, ``compare`` and ``heredoc`` goals; needs ``self.rng``."""

    rng: random.Random

    def _arith(self, g: dict[str, Any], plan: _PlanLike) -> None:
        (v1, v2), (a, b), op = g["vars"], g["values"], g["sign"]
        style = self.rng.randrange(4)
        if style == 0:
            plan.add(f"{v1}={a}")
            plan.add(f"{v2}={b}")
        else:
            plan.add(f"{v1}={a}; {v2}={b}")
        if self.rng.random() < 0.3:
            plan.add(f'echo "{v1}=${v1} {v2}=${v2}"')
        if style == 3:
            sign = "\\*" if op == "*" else op
            plan.add(f"expr ${v1} {sign} ${v2}")
        elif style == 2:
            plan.add(f"r=$(({v1} {op} {v2}))")
            plan.add("echo $r")
        else:
            plan.add(f"echo $(({v1} {op} {v2}))")

    def _loop(self, g: dict[str, Any], plan: _PlanLike) -> None:
        d, stem, n, word = g["dir"], g["stem"], g["n"], g["word"]
        plan.add(f"mkdir -p {plan.p(d)}")
        if self.rng.random() < 0.4:
            plan.cd(d)
        where = plan.p(d)
        prefix = "" if where == "." else where + "/"
        style = self.rng.randrange(4)
        if style == 3:
            plan.add(f'for i in $(seq 1 {n}); do\n  echo "{word} $i" > {prefix}{stem}$i.txt\ndone')
        elif style == 0:
            plan.add(f'for i in $(seq 1 {n}); do echo "{word} $i" > {prefix}{stem}$i.txt; done')
        elif style == 1:
            nums = " ".join(str(i) for i in range(1, n + 1))
            plan.add(f'for i in {nums}; do echo "{word} $i" > {prefix}{stem}$i.txt; done')
        else:
            plan.add(
                f'i=1; while [ $i -le {n} ]; do echo "{word} $i" > {prefix}{stem}$i.txt; '
                "i=$((i + 1)); done"
            )
        plan.add("ls" if where == "." else f"ls {where}")
        if self.rng.random() < 0.5:
            plan.add(f"cat {prefix}{stem}{n}.txt")

    def _distinct(self, g: dict[str, Any], plan: _PlanLike) -> None:
        p = plan.p(g["path"])
        if self.rng.random() < 0.5:
            plan.add(f"head -3 {p}")
        plan.add(
            self.rng.choice(
                [
                    f"tail -n +2 {p} | cut -d, -f1 | sort -u",
                    f"cut -d, -f1 {p} | tail -n +2 | sort | uniq",
                    f"awk -F, 'NR > 1 {{print $1}}' {p} | sort -u",
                ]
            )
        )

    def _column_sum(self, g: dict[str, Any], plan: _PlanLike) -> None:
        p = plan.p(g["path"])
        if self.rng.random() < 0.5:
            plan.add(f"cat {p}")
        plan.add(
            self.rng.choice(
                [
                    f"awk -F, 'NR > 1 {{s += $2}} END {{print s}}' {p}",
                    f"tail -n +2 {p} | cut -d, -f2 | paste -sd+ | bc",
                    f"python3 -c \"import csv; print(sum(int(r[1]) for r in "
                    f"list(csv.reader(open('{p}')))[1:]))\"",
                ]
            )
        )

    def _row_count(self, g: dict[str, Any], plan: _PlanLike) -> None:
        p = plan.p(g["path"])
        if self.rng.random() < 0.4:
            plan.add(f"wc -l {p}")
        plan.add(self.rng.choice([f"tail -n +2 {p} | wc -l", f"sed 1d {p} | wc -l",
                                  f"grep -c , {p} | awk '{{print $1 - 1}}'"]))

    def _write_lines(self, g: dict[str, Any], plan: _PlanLike) -> None:
        lines = g["lines"]
        if dirname(g["path"]) and self.rng.random() < 0.35:
            plan.cd(dirname(g["path"]))
        p = plan.p(g["path"])
        style = self.rng.randrange(3)
        if style == 0:
            plan.add(f"printf '%s\\n' {' '.join(quote(x) for x in lines)} > {p}")
        elif style == 1:
            plan.add(f"echo {quote(lines[0])} > {p}")
            for line in lines[1:]:
                plan.add(f"echo {quote(line)} >> {p}")
        else:
            plan.add("printf '" + "\\n".join(lines) + f"\\n' > {p}")
        plan.add(self.rng.choice([f"wc -l {p}", f"wc -l < {p}", f"cat {p} | wc -l"]))

    def _script(self, g: dict[str, Any], plan: _PlanLike) -> None:
        p = plan.p(g["path"])
        code = g["code"]
        if self.rng.random() < 0.5:
            plan.add(f'echo "{code}" > {p}')
        else:
            plan.add(f"printf '%s\\n' \"{code}\" > {p}")
        if self.rng.random() < 0.4:
            plan.add(f"cat {p}")
        plan.add(f"python3 {p}")

    def _condition(self, g: dict[str, Any], plan: _PlanLike) -> None:
        p, yes, no = plan.p(g["path"]), g["yes"], g["no"]
        if self.rng.random() < 0.4:
            plan.add(f"ls {plan.p(dirname(g['path']))}" if dirname(g["path"]) else "ls")
        plan.add(
            self.rng.choice(
                [
                    f"if [ -f {p} ]; then echo {yes}; else echo {no}; fi",
                    f"if test -e {p}; then echo {yes}; else echo {no}; fi",
                    f"[ -f {p} ] && echo {yes} || echo {no}",
                ]
            )
        )

    def _status(self, g: dict[str, Any], plan: _PlanLike) -> None:
        p, word = plan.p(g["path"]), g["word"]
        if self.rng.random() < 0.5:
            plan.add(f"grep -q {word} {p}")
            plan.add("echo $?")
        else:
            plan.add(f"grep -q {word} {p}; echo $?")

    def _compare(self, g: dict[str, Any], plan: _PlanLike) -> None:
        src, dst = plan.p(g["src"]), plan.p(g["dst"])
        plan.add(f"cp {src} {dst}")
        plan.add(f"echo {quote(g['text'])} >> {dst}")
        if self.rng.random() < 0.3:
            plan.add(f"tail -n 2 {dst}")
        plan.add(f"diff {src} {dst}" if self.rng.random() < 0.7 else
                 f"diff {src} {dst}; echo exit $?")

    def _heredoc(self, g: dict[str, Any], plan: _PlanLike) -> None:
        rng = self.rng
        if "path" not in g:  # a python3 program on standard input
            n = g["n"]
            body = rng.choice([f"for i in range(1, {n} + 1):\n    print(i * i)",
                               f"print('\\n'.join(str(i ** 2) for i in range(1, {n + 1})))"])
            end = rng.choice(["EOF", "PY"])
            opener = f"'{end}'" if rng.random() < 0.5 else end
            plan.add(f"python3 - <<{opener}\n{body}\n{end}")
            return
        if dirname(g["path"]) and rng.random() < 0.3:
            plan.cd(dirname(g["path"]))
        p, var = plan.p(g["path"]), g["var"]
        head = rng.choice(["cat > {p} <<{o}", "cat <<{o} > {p}"])
        if var is None:
            text = head.format(p=p, o="'EOF'") + "\n" + "\n".join(g["lines"]) + "\nEOF"
        else:
            assign = f"{var}={g['value']}"
            text = head.format(p=p, o="EOF") + f"\n{var}=${var}\ntwice=$(({var} * 2))\nEOF"
            if rng.random() < 0.5:
                plan.add(assign)
            else:
                text = f"{assign}\n{text}"  # the assignment in the same action
        if rng.random() < 0.5:
            plan.add(f"{text}\ncat {p}")
        else:
            plan.add(text)
            plan.add(rng.choice([f"cat {p}", f"cat -n {p}"]))
