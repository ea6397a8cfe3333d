"""Incremental detokenization and stop-string search over generated tokens.

:class:`IncrementalDecoder` grows the text of a token sequence one token at a time, decoding
only a short window of the newest tokens per step (the scheme of vLLM's
``detokenize_incrementally``: the text of ``ids[prefix:]`` minus that of
``ids[prefix:read]``, so that a tokenizer which drops a leading space at the start of a slice
or needs several tokens for one UTF-8 character still yields the full decoding's text).
:func:`find_stop` uses it to find where the first stop string completes, searching only the
new text's tail (a window of the longest stop string) per token: the work is linear in the
number of tokens, not in tokens times stop strings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Decode = Callable[[list[int]], str]
"""Token ids -> text (e.g. ``tokenizer.decode(ids, skip_special_tokens=True)``)."""

_INCOMPLETE = "\ufffd"  # what a decoder writes for the bytes of a character not yet complete


class IncrementalDecoder:
    """The text of a growing token sequence, decoded a few tokens at a time.

    Args:
        decode: Token ids -> text.

    Attributes:
        ids: The tokens pushed so far.
        text: Their text, except a trailing incomplete character (returned by :meth:`flush`).
    """

    def __init__(self, decode: Decode):
        self.decode = decode
        self.ids: list[int] = []
        self.text = ""
        self._prefix = 0  # start of the window decoded as context for the new tokens
        self._read = 0  # tokens whose text is in self.text

    def push(self, token: int) -> str:
        """Append ``token``; returns the text it completes ("" while a character is split)."""
        self.ids.append(token)
        before = self.decode(self.ids[self._prefix : self._read])
        window = self.decode(self.ids[self._prefix :])
        if len(window) <= len(before) or window.endswith(_INCOMPLETE):
            return ""
        new = window[len(before) :]
        self.text += new
        self._prefix, self._read = self._read, len(self.ids)
        return new

    def flush(self) -> str:
        """The text of tokens still held back (an incomplete last character), appended."""
        before = self.decode(self.ids[self._prefix : self._read])
        new = self.decode(self.ids[self._prefix :])[len(before) :]
        self.text += new
        self._prefix = self._read = len(self.ids)
        return new


def find_stop(ids: Sequence[int], stops: Sequence[str], decode: Decode) -> int | None:
    """How many of ``ids`` are generated when the first of ``stops`` is complete, or ``None``.

    That is the length of the shortest prefix of ``ids`` ``[num_tokens]`` whose text contains
    a stop string: what an engine that checks stop strings after every token generates. One
    pass of :class:`IncrementalDecoder`; each token's new text is searched together with the
    ``max(len(stop)) - 1`` characters before it, so a stop string is found once, when its
    last character arrives.
    """
    if not stops or not ids:
        return None
    overlap = max(len(s) for s in stops) - 1
    decoder = IncrementalDecoder(decode)
    for count, token in enumerate(ids, start=1):
        new = decoder.push(token)
        if count == len(ids):
            new += decoder.flush()
        if new:
            tail = decoder.text[max(0, len(decoder.text) - len(new) - overlap) :]
            if any(s in tail for s in stops):
                return count
    return None
