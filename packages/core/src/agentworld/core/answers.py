"""The output contract of a world-model answer, as AgentWorldBench reads it.

Source: the evaluation code of QwenLM/Qwen-AgentWorld (``eval/lwm_eval_utils/output_parser.py``,
``task_configs.py``; arXiv 2606.24597), reimplemented here:

1. Reasoning in ``<think>...</think>`` is removed (tags matched case-insensitively, each
   opening tag paired with the earliest unpaired closing tag after it; a closing tag with no
   opening removes everything before it; an opening tag with no closing removes up to the next
   ``<predicted_observation>``, else to the end).
2. The observation is the content of the **last** ``<predicted_observation>`` block (to the
   end of the text when that block is not closed), stripped; without a block it is the whole
   cleaned text.
3. A reference observation loses the ``**Environment Observation:**`` marker before any
   comparison.
4. The GUI domains (android, web, os) must answer with exactly one closed block (their
   system prompts demand it); :func:`single_closed_block` checks that.

:func:`diagnostics` computes the "World Model Output Diagnostics" the public GUI judge prompts
refer to (their names are the prompts'; the public ``eval.py`` never computes them).
"""

from __future__ import annotations

import re

RESPONSE_TAG = "predicted_observation"
OBSERVATION_MARKER = "**Environment Observation:**"
DOMAINS: tuple[str, ...] = ("mcp", "search", "terminal", "swe", "android", "web", "os")
"""The seven domains of AgentWorldBench, in the public README's order."""
GUI_DOMAINS = frozenset({"android", "web", "os"})

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_OPEN = re.compile(rf"<{RESPONSE_TAG}>", re.IGNORECASE)
_CLOSE = re.compile(rf"</{RESPONSE_TAG}>", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z']+")
SPECULATIVE_WORDS = frozenset(
    {"maybe", "might", "perhaps", "possibly", "probably", "likely", "would", "could", "may",
     "assume", "assuming", "guess", "unsure", "uncertain", "alternatively", "suppose"}
)


def strip_think(text: str) -> str:
    """``text`` without its reasoning (rule 1 of the module docstring), stripped.

    Nested ``<think>`` blocks vanish whole; text outside every block is kept verbatim apart
    from the final strip.
    """
    if not text:
        return text
    ranges: list[tuple[int, int]] = []
    pending: list[int] = []  # positions of opening tags still unpaired, oldest first
    for tag in _THINK_TAG.finditer(text):
        if tag.group(1):  # a closing tag
            if pending:
                ranges.append((pending.pop(0), tag.end()))
            else:
                ranges.append((0, tag.end()))
        else:
            pending.append(tag.start())
    for start in pending:
        block = _OPEN.search(text, start)
        ranges.append((start, block.start() if block else len(text)))
    if not ranges:
        return text.strip()
    ranges.sort()
    kept, cursor = [], 0
    for start, end in ranges:
        if start > cursor:
            kept.append(text[cursor:start])
        cursor = max(cursor, end)
    kept.append(text[cursor:])
    return "".join(kept).strip()


def extract_observation(answer: str) -> str:
    """The observation of ``answer`` (rules 1-2): the last block's content, else the whole
    cleaned text; ``""`` for an empty answer."""
    cleaned = strip_think(answer or "")
    opens = list(_OPEN.finditer(cleaned))
    if not opens:
        return cleaned.strip()
    start = opens[-1].end()
    close = _CLOSE.search(cleaned, start)
    return cleaned[start : close.start() if close else len(cleaned)].strip()


def clean_reference(text: str) -> str:
    """A reference observation without the ``**Environment Observation:**`` marker (rule 3),
    stripped."""
    if text.startswith(OBSERVATION_MARKER):
        return text[len(OBSERVATION_MARKER) :].strip()
    return text.replace(OBSERVATION_MARKER, "").strip()


def single_closed_block(answer: str) -> bool:
    """Whether ``answer`` (reasoning removed) holds exactly one opening and one closing
    ``predicted_observation`` tag, in that order (rule 4)."""
    cleaned = strip_think(answer or "")
    opens, closes = list(_OPEN.finditer(cleaned)), list(_CLOSE.finditer(cleaned))
    return len(opens) == 1 and len(closes) == 1 and opens[0].end() <= closes[0].start()


def format_ok(answer: str, domain: str) -> bool:
    """The benchmark's format requirement for ``domain``: one closed block for the GUI
    domains; any answer with a non-empty observation elsewhere."""
    if domain in GUI_DOMAINS:
        return single_closed_block(answer)
    return bool(extract_observation(answer))


def diagnostics(answer: str) -> dict[str, int | bool]:
    """World Model Output Diagnostics of a raw answer (names as in the public GUI judge
    prompts): tag counts in the raw answer, characters outside the extracted observation,
    counts of speculative words (``would``, ``likely`` and the set
    :data:`SPECULATIVE_WORDS`), and the extracted observation's length."""
    raw = answer or ""
    extracted = extract_observation(raw)
    words = [w.lower() for w in _WORD.findall(raw)]
    return {
        "response_start_tag_count": len(_OPEN.findall(raw)),
        "response_end_tag_count": len(_CLOSE.findall(raw)),
        "raw_chars": len(raw),
        "raw_nonfinal_chars": max(len(raw) - len(extracted), 0),
        "raw_speculative_word_count": sum(w in SPECULATIVE_WORDS for w in words),
        "raw_would_word_count": words.count("would"),
        "raw_likely_word_count": words.count("likely"),
        "extracted_output_chars": len(extracted),
        "extracted_no_output": not extracted,
    }
