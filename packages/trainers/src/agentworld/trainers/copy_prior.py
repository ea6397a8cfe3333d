"""A copy prior for tiny models trained from scratch: a working induction circuit at step 0.

A world model of a terminal mostly *copies*: ``ls DIR`` repeats a listing from the initial-state
description, ``cat FILE`` repeats its contents, error messages repeat the command's words. The
mechanism is the two-layer induction circuit (Olsson et al. 2022, "In-context Learning and
Induction Heads", arXiv 2209.11895): a previous-token head in layer 1 writes "the token before me"
into the residual stream; an induction head in layer 2 finds earlier positions whose previous token
equals the current token and copies the token found there ("... a b ... a" -> "b").

Small models learn this circuit only after a long loss plateau. Aoyama et al. 2025 ("Predicting the
Formation of Induction Heads", arXiv 2511.16893) fit the emergence point at about
``10**5.7 * sqrt(batch * context)`` training tokens: ~45M tokens for 8 x 1,024-token batches,
ten times what the quickstart's 10 CPU-minutes train on. We measured exactly that plateau
(``bench/copy_vs_lookup.py``). So instead of waiting for it, :func:`apply_copy_prior` writes the
circuit into the weights of a freshly built Qwen3 model; training then sharpens and reuses it.

The induction head matches *bigrams*: the current and the previous token against the two tokens
before each earlier position. With a one-token match a copy cannot continue past a token that
occurs all over the context (a newline, a space, ``-``): it jumps to any earlier place after that
token. Terminal output is full of them.

Layout of the residual stream (``d = hidden_size``):

- ``[0, d/2)``: token identity (the embedding; tied with the output layer);
- ``[d/2, d/2 + d/3)``: previous-token identity, written by layer 1, query head 0;
- ``[d/2 + d/3, d - 1)``: identity of the token two back, written by layer 1, query head 1;
- ``d - 1``: a constant, which gives layer 1 a content-free query and key.

Layer 1, KV head 0: the constant dimension is projected onto the highest-frequency RoPE pairs,
the key rotated by one position and query head ``h`` by ``-h`` positions, so head ``h``'s
``q_i . k_j`` peaks at ``j = i - 1 - h`` (the ``q_norm``/``k_norm`` gains make it sharp).
Layer 2, query head 0 and KV head 0: the query is (current token, previous token), the key
(previous token, token two back), each pair matched in its own half of the lowest-frequency RoPE
pairs (``rope_theta`` 1e6, Qwen3's own value, keeps them nearly position-free over 2,048 tokens);
the value and output map the found token's identity back onto its embedding. All other
output projections (attention and MLP) start at zero, as in zero-initialised residual branches, so
the circuit starts clean and every other head and MLP grows from zero. The embedding scale is 1 (not
0.02) so AdamW's first steps do not erase the structure; the final norm's gain sets the logit scale.
"""

from __future__ import annotations

import math

import torch
from transformers import PreTrainedModel

PREV_PAIRS = 8          # RoPE pairs (highest frequencies) that locate the previous position
CONTENT_FROM_PAIR = 16  # RoPE pairs from here on (lowest frequencies) carry token identity
PREV_GAIN = 3.5         # q/k norm gain on the positional pairs: softmax margin to neighbours
CONTENT_GAIN = 2.0      # q/k norm gain on the content pairs
COPY_GAIN = 4.0         # scale of the copied identity written back by layer 2 (6 loops on real data)
FINAL_NORM_GAIN = 0.1   # logit scale of the tied output layer at step 0


def _orthonormal(rows: int, cols: int, g: torch.Generator) -> torch.Tensor:
    """A ``[rows, cols]`` matrix with orthonormal columns (rows >= cols) or rows (rows < cols)."""
    q, _ = torch.linalg.qr(torch.randn(max(rows, cols), min(rows, cols), generator=g))
    return q if rows >= cols else q.T


def _check(model: PreTrainedModel) -> None:
    cfg = model.config
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None or len(layers) < 2 or not hasattr(layers[0].self_attn, "q_norm"):
        raise ValueError(
            "the copy prior needs a Qwen3-architecture model (q_norm/k_norm) with at least 2 layers;"
            f" got {type(model).__name__}"
        )
    if cfg.head_dim % 2 or cfg.head_dim // 2 <= CONTENT_FROM_PAIR:  # also > PREV_PAIRS
        raise ValueError(f"the copy prior needs head_dim >= {2 * CONTENT_FROM_PAIR + 2}; got {cfg.head_dim}")
    if cfg.hidden_size // 3 < cfg.head_dim:
        raise ValueError(
            f"the copy prior needs hidden_size >= 3 * head_dim ({3 * cfg.head_dim}); got {cfg.hidden_size}"
        )
    if cfg.num_attention_heads < 2:
        raise ValueError(f"the copy prior needs 2 attention heads or more; got {cfg.num_attention_heads}")


@torch.no_grad()
def apply_copy_prior(model: PreTrainedModel, seed: int = 0) -> PreTrainedModel:
    """Write a two-layer induction circuit into a freshly initialised Qwen3 causal LM, in place.

    Args:
        model: a Qwen3 causal LM (``model.model.layers[i].self_attn`` with ``q_norm``/``k_norm``),
            at least 2 layers and 2 heads, ``head_dim >= 34``, ``hidden_size >= 3 * head_dim``; its RoPE should be low-frequency enough that
            pairs ``CONTENT_FROM_PAIR..head_dim/2`` barely rotate over the context (``rope_theta``
            1e6 for 2,048 tokens).
        seed: seed of the random projections (the rest of the model keeps its own init).

    Returns:
        ``model``: layer 1 query heads 0 and 1 attend one and two positions back; layer 2 query
        head 0 to positions preceded by the current bigram (or, weaker, the current token),
        predicting the token found there.

    Raises:
        ValueError: ``model`` is not a Qwen3-architecture model of a usable shape.
    """
    _check(model)
    cfg = model.config
    d, hd = cfg.hidden_size, cfg.head_dim
    half = hd // 2
    g = torch.Generator().manual_seed(seed)
    n_tok, n_prev = d // 2, d // 3
    tok, prev, const = slice(0, n_tok), slice(n_tok, n_tok + n_prev), d - 1
    prev2 = slice(n_tok + n_prev, const)

    emb = model.get_input_embeddings().weight
    emb.zero_()
    emb[:, tok] = torch.randn(emb.shape[0], n_tok, generator=g)
    emb[:, const] = math.sqrt(n_tok)
    model.model.norm.weight.fill_(FINAL_NORM_GAIN)
    for layer in model.model.layers:
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
    l1, l2 = model.model.layers[0].self_attn, model.model.layers[1].self_attn
    theta = cfg.rope_parameters["rope_theta"]
    inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)

    # Layer 1: query head h - 1 attends h positions back (h = 1, 2). RoPE turns the (q_f, k_f)
    # pairs, as complex numbers, into Re(q conj(k) e^{i w_f (i - j)}): with k = e^{i w_f} and
    # q = e^{-i (h - 1) w_f} that is cos(w_f (i - j - h)), largest at j = i - h.
    k1 = torch.zeros(hd)
    for f in range(PREV_PAIRS):
        k1[f], k1[f + half] = math.cos(inv_freq[f]), math.sin(inv_freq[f])
    _set_head(l1.k_proj.weight, 0, hd, const, k1)
    pos_dims = [*range(PREV_PAIRS), *range(half, half + PREV_PAIRS)]
    _gain(l1, pos_dims, PREV_GAIN)
    to_value = torch.randn(hd, n_tok, generator=g) / math.sqrt(n_tok)  # identity -> head value
    l1.v_proj.weight[:hd].zero_()
    l1.v_proj.weight[:hd, tok] = to_value
    to_residual = []  # per back-offset: head value -> its residual slice
    for back, (head, rows) in enumerate(zip(range(2), (prev, prev2)), start=1):
        q1 = torch.zeros(hd)
        for f in range(PREV_PAIRS):
            q1[f] = math.cos((back - 1) * inv_freq[f])
            q1[f + half] = -math.sin((back - 1) * inv_freq[f])
        _set_head(l1.q_proj.weight, head, hd, const, q1)
        out = _orthonormal(rows.stop - rows.start, hd, g)
        l1.o_proj.weight[rows, head * hd : (head + 1) * hd] = out
        to_residual.append(out)

    # Layer 2: induction head. The query is (current token, previous token), the key (previous
    # token, the one before), matched in two disjoint sets of low-frequency RoPE pairs: a
    # position preceded by the current bigram scores twice a position preceded by the token alone.
    pairs = list(range(CONTENT_FROM_PAIR, half))
    groups = (pairs[: len(pairs) // 2], pairs[len(pairs) // 2 :])
    query, key = torch.zeros(hd, d), torch.zeros(hd, d)
    for dims_pairs, (q_rows, q_read), (k_rows, k_read) in zip(
        groups,
        ((tok, to_value), (prev, to_residual[0].T)),
        ((prev, to_residual[0].T), (prev2, to_residual[1].T)),
    ):
        dims = [*dims_pairs, *(p + half for p in dims_pairs)]
        match = torch.zeros(hd, hd)
        match[dims] = _orthonormal(len(dims), hd, g)
        query[:, q_rows] = match @ q_read
        key[:, k_rows] = match @ k_read
    content_dims = [*pairs, *(p + half for p in pairs)]
    l2.q_proj.weight[:hd] = query
    l2.k_proj.weight[:hd] = key
    _gain(l2, content_dims, CONTENT_GAIN)
    copy = _orthonormal(hd, n_tok, g)
    l2.v_proj.weight[:hd].zero_()
    l2.v_proj.weight[:hd, tok] = copy
    l2.o_proj.weight[tok, :hd] = copy.T * COPY_GAIN
    return model


def _set_head(weight: torch.Tensor, head: int, hd: int, column: int, vector: torch.Tensor) -> None:
    rows = slice(head * hd, (head + 1) * hd)
    weight[rows].zero_()
    weight[rows, column] = vector


def _gain(attn: torch.nn.Module, dims: list[int], gain: float) -> None:
    for norm in (attn.q_norm, attn.k_norm):
        norm.weight.fill_(1.0)
        norm.weight[dims] = gain
