"""Bug injection by mutation, as SWE-smith does (Yang et al. 2025, "SWE-smith: Scaling Data for
Software Engineering Agents", its procedural ``LM-free`` bug generation).

Each operator (:data:`OPERATORS`, one task kind each) lists the single-line mutations of a
module's source it can make, found with :mod:`ast` and applied as text, so the rest of the file
is untouched:

* ``flip_comparison``: one comparison operator flipped (``<`` to ``<=``, ``==`` to ``!=``, ...).
* ``off_by_one``: an integer in a slice, a ``range`` call or a ``+``/``-`` moved by one, or a
  ``range`` bound gets ``+ 1``.
* ``swap_arguments``: the first two positional arguments of a call, or the operands of a
  non-commutative ``-``, ``/``, ``//`` or ``%``, swapped.
* ``change_constant``: another integer constant (a table entry, a modulus) plus one, or a
  ``True``/``False`` flipped.
* ``delete_line``: one simple statement (an assignment, an augmented assignment, a call)
  removed from a block that keeps other statements.

A :class:`Mutation` records the file, the 1-based line, the original and the mutated line
(``None`` once deleted); :func:`apply` makes the buggy text and :func:`fix_edit` the
``str_replace`` that reverts it.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass

OPERATORS: tuple[str, ...] = ("flip_comparison", "off_by_one", "swap_arguments",
                              "change_constant", "delete_line")
_FLIPS = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
          ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}
_NONCOMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod)


@dataclass(frozen=True)
class Mutation:
    """One single-line mutation of ``file`` (a path relative to the repository root).

    Attributes:
        kind: The operator (:data:`OPERATORS`).
        file: Relative path of the mutated module.
        line: 1-based line number in the original file.
        original: The original line (no line break).
        mutated: The mutated line, or ``None`` when the line is deleted.
    """

    kind: str
    file: str
    line: int
    original: str
    mutated: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def _line_edit(lines: list[str], node: ast.AST, new: str) -> tuple[int, str] | None:
    """``(line, mutated line)`` replacing ``node``'s source by ``new`` (one-line nodes only)."""
    if node.lineno != node.end_lineno:
        return None
    text = lines[node.lineno - 1]
    return node.lineno, text[:node.col_offset] + new + text[node.end_col_offset:]


def _segment(lines: list[str], node: ast.AST) -> str:
    return lines[node.lineno - 1][node.col_offset:node.end_col_offset]


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first))
    return out


def candidates(file: str, source: str, kind: str) -> list[Mutation]:
    """Every mutation of operator ``kind`` of ``source`` (module ``file``), in source order.

    Raises:
        ValueError: ``kind`` is not in :data:`OPERATORS`.
    """
    if kind not in OPERATORS:
        raise ValueError(f"unknown mutation kind {kind!r}; valid: {', '.join(OPERATORS)}")
    lines = source.split("\n")
    tree = ast.parse(source)
    edits: list[tuple[int, str | None]] = []
    in_context = set()  # int constants where off_by_one applies
    bounds = set()  # slice bounds and range arguments (a name there may get + 1)
    for node in ast.walk(tree):
        if isinstance(node, ast.Slice):
            bounds |= {id(n) for n in (node.lower, node.upper) if n is not None}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            bounds |= {id(a) for a in node.args}
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            in_context |= {id(node.left), id(node.right)}
    in_context |= bounds
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if kind == "flip_comparison" and isinstance(node, ast.Compare) and len(node.ops) == 1:
            old, new = _FLIPS.get(type(node.ops[0]), (None, None))
            left, right = node.left, node.comparators[0]
            if old and left.end_lineno == right.lineno == node.lineno:
                text = lines[node.lineno - 1]
                gap = text[left.end_col_offset:right.col_offset]
                if gap.count(old) == 1 and (old != "<" or "<=" not in gap) and (old != ">" or ">=" not in gap):
                    gap = gap.replace(old, new)
                    edits.append((node.lineno, text[:left.end_col_offset] + gap + text[right.col_offset:]))
        elif kind == "off_by_one" and id(node) in in_context:
            if isinstance(node, ast.Constant) and type(node.value) is int:
                for value in (node.value + 1, node.value - 1):
                    if value >= 0:
                        edits.append(_line_edit(lines, node, str(value)))
            elif isinstance(node, ast.Name) and id(node) in bounds:
                edits.append(_line_edit(lines, node, f"{node.id} + 1"))
        elif kind == "swap_arguments":
            if isinstance(node, ast.Call) and len(node.args) >= 2 and node.lineno == node.end_lineno:
                a, b = node.args[0], node.args[1]
                sa, sb = _segment(lines, a), _segment(lines, b)
                if sa != sb and not isinstance(a, ast.Starred) and not isinstance(b, ast.Starred):
                    text = lines[node.lineno - 1]
                    edits.append((node.lineno, text[:a.col_offset] + sb + text[a.end_col_offset:b.col_offset]
                                  + sa + text[b.end_col_offset:]))
            elif (isinstance(node, ast.BinOp) and isinstance(node.op, _NONCOMMUTATIVE)
                  and node.lineno == node.end_lineno and not isinstance(node.left, ast.BinOp)):
                a, b = node.left, node.right
                sa, sb = _segment(lines, a), _segment(lines, b)
                if sa != sb:
                    text = lines[node.lineno - 1]
                    edits.append((node.lineno, text[:a.col_offset] + sb + text[a.end_col_offset:b.col_offset]
                                  + sa + text[b.end_col_offset:]))
        elif kind == "change_constant" and isinstance(node, ast.Constant) and id(node) not in in_context:
            if type(node.value) is bool:
                edits.append(_line_edit(lines, node, str(not node.value)))
            elif type(node.value) is int:
                edits.append(_line_edit(lines, node, str(node.value + 1)))
        elif kind == "delete_line" and isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.While)):
            orelse = [] if isinstance(node, ast.FunctionDef) else node.orelse
            for block in (node.body, orelse):
                if len(block) < 2:
                    continue
                for stmt in block:
                    if (isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr))
                            and stmt.lineno == stmt.end_lineno and id(stmt) not in docstrings):
                        edits.append((stmt.lineno, None))
    seen, out = set(), []
    for edit in sorted((e for e in edits if e is not None), key=lambda e: (e[0], e[1] or "")):
        if edit not in seen and edit[1] != lines[edit[0] - 1]:
            seen.add(edit)
            out.append(Mutation(kind, file, edit[0], lines[edit[0] - 1], edit[1]))
    return out


def apply(source: str, mutation: Mutation) -> str:
    """``source`` with ``mutation`` applied.

    Raises:
        ValueError: the line at ``mutation.line`` is not ``mutation.original``.
    """
    lines = source.split("\n")
    if not 1 <= mutation.line <= len(lines) or lines[mutation.line - 1] != mutation.original:
        raise ValueError(f"{mutation.file}:{mutation.line} is not the mutation's original line")
    if mutation.mutated is None:
        del lines[mutation.line - 1]
    else:
        lines[mutation.line - 1] = mutation.mutated
    return "\n".join(lines)


def fix_edit(buggy: str, mutation: Mutation) -> tuple[str, str]:
    """``(old_str, new_str)`` of the ``str_replace`` that reverts ``mutation`` in ``buggy``:
    the mutated line (or, for a deletion, the line before the gap) widened by neighbouring
    lines until ``old_str`` occurs once in ``buggy``."""
    lines = buggy.split("\n")
    at = mutation.line - 1  # index of the mutated line (deletion: of the line after the gap)
    lo, hi = (at, at + 1) if mutation.mutated is not None else (at - 1, at)
    while True:
        old = "\n".join(lines[lo:hi])
        if mutation.mutated is None:
            new = "\n".join(lines[lo:at] + [mutation.original] + lines[at:hi])
        else:
            new = "\n".join(lines[lo:at] + [mutation.original] + lines[at + 1:hi])
        if old and buggy.count(old) == 1 or (lo == 0 and hi == len(lines)):
            return old, new
        lo, hi = max(lo - 1, 0), min(hi + 1, len(lines))
