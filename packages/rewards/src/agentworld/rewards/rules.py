"""Rule-based fidelity rewards: exact match, edit similarity, line F1, domain score, format.

Calling convention (shared by every reward in this package)
-----------------------------------------------------------
Each reward is a batched :class:`~agentworld.core.protocols.RewardFn`::

    reward(predictions, references, contexts) -> list[float]   # all [batch]

* ``predictions[i]`` is the *parsed* observation text of the model's answer
  (:attr:`agentworld.core.types.Prediction.observation`), or ``None`` when the
  answer was malformed. A ``None`` prediction scores ``0.0`` in every
  content reward.
* ``references[i]`` is the real observation text.
* ``contexts[i]`` is a dict. Keys read here (all optional):
  ``"raw"`` (the raw model answer, reasoning included; read by
  :class:`FormatValidity`), ``"domain"`` (a
  :class:`~agentworld.core.protocols.Domain`, or a registered domain name;
  read by :class:`DomainScore`) and ``"reference"`` (the real
  :class:`~agentworld.core.types.Observation`; read by :class:`DomainScore`).

All scores lie in ``[0, 1]`` and depend only on the inputs (no state, no
randomness). Sequences of different lengths raise ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentworld.core.formats import parse_prediction
from agentworld.core.sequences import multiset_f1
from agentworld.core.types import Observation
from rapidfuzz.distance import Indel, Levenshtein


def normalize(text: str) -> str:
    """Canonical form used by the content rewards before comparing.

    ``\\r\\n`` and lone ``\\r`` become ``\\n``, trailing whitespace is removed
    from every line and trailing newlines from the end of the text. Leading
    whitespace and blank lines inside the text are kept (indentation and
    layout are part of an observation).
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).rstrip("\n")


def lines_of(text: str) -> list[str]:
    """The lines of ``normalize(text)``; the empty text has no lines (``[]``)."""
    norm = normalize(text)
    return norm.split("\n") if norm else []


def check_batch(
    predictions: Sequence[Any], references: Sequence[Any], contexts: Sequence[Any]
) -> None:
    """Raise ``ValueError`` unless the three batch sequences have equal lengths."""
    if not len(predictions) == len(references) == len(contexts):
        raise ValueError(
            f"reward inputs must have equal lengths, got predictions={len(predictions)}, "
            f"references={len(references)}, contexts={len(contexts)}"
        )


class _PairReward:
    """Base for rewards computed pair by pair from ``(prediction, reference)``."""

    name = "pair"

    def pair(self, prediction: str, reference: str) -> float:
        raise NotImplementedError

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out; ``None`` -> 0."""
        check_batch(predictions, references, contexts)
        return [
            0.0 if p is None else self.pair(p, r)
            for p, r in zip(predictions, references, strict=True)
        ]


class ExactMatch(_PairReward):
    """1.0 when ``normalize(prediction) == normalize(reference)``, else 0.0.

    See :func:`normalize`: line endings and trailing whitespace (per line and
    at the end of the text) are ignored; everything else must match.
    """

    name = "exact_match"

    def pair(self, prediction: str, reference: str) -> float:
        return 1.0 if normalize(prediction) == normalize(reference) else 0.0


class EditSimilarity(_PairReward):
    """Normalised edit similarity of the normalised texts, via rapidfuzz.

    Args:
        metric: ``"levenshtein"`` (default): ``1 - lev(p, r) / max(|p|, |r|)``;
            ``"indel"``: ``1 - indel(p, r) / (|p| + |r|)`` (insertions and
            deletions only; equals ``difflib``'s ratio). Lengths count
            characters. Two empty strings score 1.0.

    Raises:
        ValueError: ``metric`` is neither.
    """

    name = "edit_similarity"

    def __init__(self, metric: str = "levenshtein"):
        if metric not in ("levenshtein", "indel"):
            raise ValueError(f"metric must be 'levenshtein' or 'indel', got {metric!r}")
        self.metric = metric
        self._scorer = Levenshtein if metric == "levenshtein" else Indel

    def pair(self, prediction: str, reference: str) -> float:
        p, r = normalize(prediction), normalize(reference)
        if not p and not r:
            return 1.0
        return float(self._scorer.normalized_similarity(p, r))


def line_f1(prediction: str, reference: str) -> float:
    """Multiset F1 over lines (see :func:`lines_of`).

    With ``o`` the size of the multiset intersection of the two line bags,
    precision ``o/|p|`` and recall ``o/|r|`` give ``F1 = 2o / (|p| + |r|)``.
    Two empty texts score 1.0; exactly one empty scores 0.0.
    Example: ``line_f1("a\\nb", "a\\nc") == 0.5``.
    """
    return multiset_f1(lines_of(prediction), lines_of(reference))


class LineF1(_PairReward):
    """Batched :func:`line_f1`."""

    name = "line_f1"

    def pair(self, prediction: str, reference: str) -> float:
        return line_f1(prediction, reference)


def resolve_domain(domain: Any) -> Any:
    """``domain`` itself, or the registered domain of that name when it is a string.

    Raises:
        agentworld.core.plugins.UnknownPluginError: the name is not registered.
    """
    if isinstance(domain, str):
        from agentworld.core.plugins import get_domain

        return get_domain(domain)
    return domain


class DomainScore:
    """The domain's own structural scorer: ``domain.score(prediction, reference_observation)``.

    Per item, the domain is ``contexts[i]["domain"]`` (an object with a
    ``score(predicted: str, reference: Observation) -> float`` method, or a
    registered domain name), falling back to the ``domain`` given at
    construction. The reference is ``contexts[i]["reference"]`` (the real
    :class:`Observation`, which carries the structured ``state``), or
    ``Observation(text=references[i])`` when absent. Without any domain the
    score falls back to :func:`line_f1` on the texts. Results are clipped to
    ``[0, 1]``; a ``None`` prediction scores 0.

    Args:
        domain: Optional default domain (object or registered name).

    Raises:
        agentworld.core.plugins.UnknownPluginError: a domain name is not registered.
    """

    name = "domain"

    def __init__(self, domain: Any = None):
        self.domain = resolve_domain(domain)

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out."""
        check_batch(predictions, references, contexts)
        out = []
        for pred, ref, ctx in zip(predictions, references, contexts, strict=True):
            if pred is None:
                out.append(0.0)
                continue
            domain = resolve_domain(ctx.get("domain"))
            if domain is None:
                domain = self.domain
            if domain is None:
                out.append(line_f1(pred, ref))
                continue
            reference = ctx.get("reference")
            if not isinstance(reference, Observation):
                reference = Observation(text=ref)
            out.append(min(1.0, max(0.0, float(domain.score(pred, reference)))))
        return out


class FormatValidity:
    """1.0 when the raw answer holds exactly one closed ``<predicted_observation>`` block.

    Checks ``contexts[i]["raw"]`` with
    :func:`agentworld.core.formats.parse_prediction`. When no raw answer is
    in the context, the parsed prediction stands in: 1.0 unless it is ``None``.
    """

    name = "format_validity"

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``{0, 1}`` out."""
        check_batch(predictions, references, contexts)
        out = []
        for pred, ctx in zip(predictions, contexts, strict=True):
            raw = ctx.get("raw")
            valid = parse_prediction(raw) is not None if isinstance(raw, str) else pred is not None
            out.append(1.0 if valid else 0.0)
        return out
