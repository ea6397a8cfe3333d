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
(``experiments/copy_vs_lookup.py``). So instead of waiting for it, :func:`apply_copy_prior` writes the
circuit into the weights of a freshly built Qwen3 model; training then sharpens and reuses it.

The induction head matches the last *four* tokens (the current one and three before it) against
the four tokens before each earlier position, and the longest match wins. With a one-token match a
copy cannot continue past a token that occurs all over the context (a newline, a space, ``-``): it
jumps to any earlier place after that token. Terminal output is full of them. A bigram match still
slips inside generated text: every sentence ends in ``.`` and a newline, every listing entry in
``.txt`` and two spaces. Matching four tokens deep continues the copy there (on the quickstart's
held-out observations, 10% of the tokens are determined by the last 3 or 4 tokens but not by the
last 2: ``bench/heldout_loss.py --by-context``).

A third mechanism selects *where* to copy from at the start of an answer, when ``<predicted_observation>``
and a newline are all the answer has so far and a bigram points nowhere. SFT rationales restate the
header under which the state holds the answer (``<think>cat ~/docs/todo.txt</think>``, see
:mod:`agentworld.domains.terminal.explain`), so the header's last tokens stand 4 and 6 tokens
before the answer's first (``</think>``, a newline, ``<predicted_observation>`` and a newline are in
between). A *selection* head in layer 2 looks for the earlier position right after a newline whose
tokens 2 and 4 back are those tokens: the first line under the same header in the state
description. Token 4 back is a directory's last name token or a file's extension, 6 back the
file's stem (``todo``). The head is gated: after any token but
``<predicted_observation>`` its query points at an attention sink (``<|im_start|>``, which opens
every turn and whose value is zero), so it is silent elsewhere.

Layout of the residual stream (``d = hidden_size``):

- ``[0, d/2)``: token identity (the embedding; tied with the output layer);
- then one ``v``-dimensional slot per offset of :data:`BACK` (with the selection head
  :data:`SELECT_BACK`): the identity of the token that many positions back, written by layer 1,
  query head ``i`` for the ``i``-th offset; ``v`` = the free dimensions over the offsets, at most
  ``head_dim``;
- ``d - 1``: a constant, which gives layer 1 a content-free query and key.

Layer 1, every KV head: the constant dimension is projected onto the highest-frequency RoPE pairs,
the key rotated by one position and a query head by ``1 - back`` positions, so its ``q_i . k_j``
peaks at ``j = i - back`` (the ``q_norm``/``k_norm`` gains make it sharp); the value is the token
identity in ``v`` dimensions.
Layer 2, query head 0 and KV head 0: the query is the tokens :data:`INDUCTION_QUERY` back, the key
those :data:`INDUCTION_KEY` back, each pair matched in its own group of the lowest-frequency RoPE
pairs (``rope_theta`` 1e6, Qwen3's own value, keeps them nearly position-free over 2,048 tokens),
the current token's group weighted above the two oldest together (:data:`INDUCTION_WEIGHTS`), so a
position matching the current and the previous token beats any that matches only older ones;
the value and output map the found token's identity back onto its embedding. The selection head is
the first query head of KV head 1: query offsets :data:`SELECT_QUERY`, key offsets
:data:`SELECT_KEY`, matched group by group in those pairs but the last, which carries the gate. All other
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
SELECT_GAIN = 8.0       # same, for the selection head (its match is exact: 1.00 at step 0)
SINK_GAIN = 8.0         # gate: query/key scale of the attention sink when the gate is closed
FINAL_NORM_GAIN = 0.1   # logit scale of the tied output layer at step 0
MIN_VALUE_DIMS = 24     # least rank of a token identity as layer 1 copies it
# The induction head matches the tokens these offsets back from the current position (0: the
# current token) to those these offsets back from an earlier position, group by group, each group
# weighted: the current token must match, and a longer match wins over a shorter one.
INDUCTION_QUERY = (0, 1, 2, 3)
INDUCTION_KEY = (1, 2, 3, 4)
INDUCTION_GROUPS = (6, 4, 3, 3)  # RoPE pairs per group
INDUCTION_WEIGHTS = (1.5, 1.0, 1.0, 1.0)
BACK = tuple(sorted({*INDUCTION_QUERY, *INDUCTION_KEY} - {0}))  # offsets layer 1 writes
# The selection head matches the tokens these offsets back from the answer's start (0: the
# current token) to those these offsets back from a position in the state, group by group.
SELECT_QUERY = (0, 4, 6)
SELECT_KEY = (1, 2, 4)
SELECT_GROUPS = (4, 7, 4)  # RoPE pairs per group
SELECT_BACK = tuple(sorted({*BACK, *SELECT_QUERY, *SELECT_KEY} - {0}))  # offsets layer 1 writes


def _orthonormal(rows: int, cols: int, g: torch.Generator) -> torch.Tensor:
    """A ``[rows, cols]`` matrix with orthonormal columns (rows >= cols) or rows (rows < cols)."""
    q, _ = torch.linalg.qr(torch.randn(max(rows, cols), min(rows, cols), generator=g))
    return q if rows >= cols else q.T


def _check(model: PreTrainedModel, select: bool) -> None:
    cfg = model.config
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None or len(layers) < 2 or not hasattr(layers[0].self_attn, "q_norm"):
        raise ValueError(
            "the copy prior needs a Qwen3-architecture model (q_norm/k_norm) with at least 2 layers;"
            f" got {type(model).__name__}"
        )
    content_pairs = max(sum(INDUCTION_GROUPS), sum(SELECT_GROUPS) + 1 if select else 0)
    if cfg.head_dim % 2 or cfg.head_dim // 2 < CONTENT_FROM_PAIR + content_pairs:  # > PREV_PAIRS
        need = 2 * (CONTENT_FROM_PAIR + content_pairs)
        raise ValueError(f"the copy prior needs head_dim >= {need}; got {cfg.head_dim}")
    backs = SELECT_BACK if select else BACK
    need = 2 * (MIN_VALUE_DIMS * len(backs) + 1)
    if cfg.hidden_size < need:
        raise ValueError(f"the copy prior needs hidden_size >= {need}; got {cfg.hidden_size}")
    heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads
    if heads < len(backs) or (select and kv < 2):
        raise ValueError(
            f"the copy prior needs {len(backs)} attention heads or more"
            + (" and 2 key/value heads" if select else "")
            + f"; got {heads} and {kv}"
        )


@torch.no_grad()
def apply_copy_prior(
    model: PreTrainedModel,
    seed: int = 0,
    select_after: int | None = None,
    sink: int | None = None,
) -> PreTrainedModel:
    """Write a two-layer induction circuit into a freshly initialised Qwen3 causal LM, in place.

    Args:
        model: a Qwen3 causal LM (``model.model.layers[i].self_attn`` with ``q_norm``/``k_norm``),
            at least 2 layers, ``head_dim >= 40``, 2 query heads, ``hidden_size >= 98``; with the
            selection head ``head_dim >= 64``, 4 query heads, 2 key/value heads,
            ``hidden_size >= 194``.
            Its RoPE should be low-frequency enough that pairs ``CONTENT_FROM_PAIR..head_dim/2``
            barely rotate over the context (``rope_theta`` 1e6 for 2,048 tokens).
        seed: seed of the random projections (the rest of the model keeps its own init).
        select_after: token id after which the selection head opens (``<predicted_observation>``);
            ``None``: no selection head.
        sink: token id of the selection head's attention sink (``<|im_start|>``, at every turn's
            start); required with ``select_after``.

    Returns:
        ``model``: layer 1 query head ``i`` attends ``BACK[i]`` (``SELECT_BACK[i]``) positions
        back; layer 2 query head 0 to positions preceded by the longest match of the last four
        tokens, predicting the token found there; with ``select_after``, the selection head (see
        the module docstring).

    Raises:
        ValueError: ``model`` is not a Qwen3-architecture model of a usable shape, or
            ``select_after`` without ``sink``.
    """
    select = select_after is not None
    if select and sink is None:
        raise ValueError("the selection head needs a sink token id (sink=...) with select_after")
    _check(model, select)
    cfg = model.config
    d, hd = cfg.hidden_size, cfg.head_dim
    half = hd // 2
    per_kv = cfg.num_attention_heads // cfg.num_key_value_heads
    backs = SELECT_BACK if select else BACK
    g = torch.Generator().manual_seed(seed)
    n_tok, const = d // 2, d - 1
    v = slot_rows = min(hd, (const - n_tok) // len(backs))  # rank of a copied identity
    tok = slice(0, n_tok)
    slots = [slice(n_tok + i * slot_rows, n_tok + (i + 1) * slot_rows) for i in range(len(backs))]

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

    # Layer 1: query head i attends BACK[i] positions back. RoPE turns the (q_f, k_f) pairs, as
    # complex numbers, into Re(q conj(k) e^{i w_f (i - j)}): with k = e^{i w_f} and
    # q = e^{-i (b - 1) w_f} that is cos(w_f (i - j - b)), largest at j = i - b.
    k1 = torch.zeros(hd)
    for f in range(PREV_PAIRS):
        k1[f], k1[f + half] = math.cos(inv_freq[f]), math.sin(inv_freq[f])
    to_value = torch.zeros(hd, n_tok)  # identity -> head value (rank v)
    to_value[:v] = torch.randn(v, n_tok, generator=g) / math.sqrt(n_tok)
    for kv in range(cfg.num_key_value_heads):
        _set_head(l1.k_proj.weight, kv, hd, const, k1)
        l1.v_proj.weight[kv * hd : (kv + 1) * hd].zero_()
        l1.v_proj.weight[kv * hd : (kv + 1) * hd, tok] = to_value
    _gain(l1, [*range(PREV_PAIRS), *range(half, half + PREV_PAIRS)], PREV_GAIN)
    read = {}  # offset -> [hd, slot rows]: recovers a token's head value from its slot
    for head, (back, rows) in enumerate(zip(backs, slots)):
        q1 = torch.zeros(hd)
        for f in range(PREV_PAIRS):
            q1[f] = math.cos((back - 1) * inv_freq[f])
            q1[f + half] = -math.sin((back - 1) * inv_freq[f])
        _set_head(l1.q_proj.weight, head, hd, const, q1)
        out = torch.zeros(slot_rows, hd)
        out[:, :v] = _orthonormal(slot_rows, v, g)
        l1.o_proj.weight[rows, head * hd : (head + 1) * hd] = out
        read[back] = out.T
    read[0] = to_value
    where = {0: tok, **dict(zip(backs, slots))}

    # Layer 2: the query of a head and the key of its KV head each read a few offsets, matched
    # pairwise in disjoint groups of the low-frequency RoPE pairs: a position scores by how many
    # of the offsets agree.
    def match(head: int, kv: int, query_backs, key_backs, sizes, pairs, weights=None) -> None:
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        weights = weights or (1.0,) * len(sizes)
        for start, size, qb, kb, w in zip(starts, sizes, query_backs, key_backs, weights):
            group = pairs[start : start + size]
            dims = [*group, *(p + half for p in group)]
            m = torch.zeros(hd, hd)
            m[dims, :v] = _orthonormal(len(dims), v, g)
            l2.q_proj.weight[head * hd : (head + 1) * hd, where[qb]] = w * m @ read[qb]
            l2.k_proj.weight[kv * hd : (kv + 1) * hd, where[kb]] = m @ read[kb]

    pairs = list(range(CONTENT_FROM_PAIR, half))
    head, kv = per_kv, 1  # the selection head: first query head of KV head 1
    for r in (0, head) if select else (0,):  # query head r and KV head r // per_kv start empty
        for proj, i in ((l2.q_proj, r), (l2.k_proj, r // per_kv), (l2.v_proj, r // per_kv)):
            proj.weight[i * hd : (i + 1) * hd].zero_()
    match(0, 0, INDUCTION_QUERY, INDUCTION_KEY, INDUCTION_GROUPS, pairs, INDUCTION_WEIGHTS)
    copy = _orthonormal(hd, n_tok, g)
    l2.v_proj.weight[:hd, tok] = copy
    l2.o_proj.weight[tok, :hd] = copy.T * COPY_GAIN
    if select:
        match(head, kv, SELECT_QUERY, SELECT_KEY, SELECT_GROUPS, pairs[:-1])
        # Gate on the last pair: the query reads "constant minus (previous token is
        # select_after)"; the key of a sink token is large there, so a closed gate attends the
        # sinks, whose value is zero.
        gate = [pairs[-1], pairs[-1] + half]
        slot_open = read[1].T @ to_value @ emb[select_after, tok]  # slot 1 after select_after
        q_gate = torch.zeros(d)
        q_gate[const] = 1.0 / math.sqrt(n_tok)
        q_gate[where[1]] = -slot_open / slot_open.dot(slot_open)
        e_sink = emb[sink, tok].clone()
        k_gate = torch.zeros(d)
        k_gate[tok] = e_sink / e_sink.dot(e_sink)
        rows = slice(head * hd, (head + 1) * hd)
        for dim in gate:
            l2.q_proj.weight[rows][dim] = q_gate * SINK_GAIN
            l2.k_proj.weight[kv * hd + dim] = k_gate * SINK_GAIN
        # Value: the token identity, with the sink's own identity projected out (value 0).
        keep = torch.eye(n_tok) - torch.outer(e_sink, e_sink) / e_sink.dot(e_sink)
        l2.v_proj.weight[kv * hd : (kv + 1) * hd, tok] = copy @ keep
        l2.o_proj.weight[tok, head * hd : (head + 1) * hd] = copy.T * SELECT_GAIN
    _gain(l2, [*pairs, *(p + half for p in pairs)], CONTENT_GAIN)
    return model


def _set_head(weight: torch.Tensor, head: int, hd: int, column: int, vector: torch.Tensor) -> None:
    rows = slice(head * hd, (head + 1) * hd)
    weight[rows].zero_()
    weight[rows, column] = vector


def _gain(attn: torch.nn.Module, dims: list[int], gain: float) -> None:
    for norm in (attn.q_norm, attn.k_norm):
        norm.weight.fill_(1.0)
        norm.weight[dims] = gain
