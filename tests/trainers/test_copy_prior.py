"""The copy prior: a freshly built model already copies in context, and training keeps it."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen3ForCausalLM

from agentworld.trainers.models.copy_prior import apply_copy_prior
from agentworld.trainers.models.specs import build_config

VOCAB = 3072


def repeated(batch: int, length: int = 96, seg: int = 12, seed: int = 0):
    """Random tokens where a ``seg``-token span reappears later at a random offset.

    Returns ``(ids [batch, length], labels [batch, length])``; labels are -100 except on the
    repeat's tokens after its first (predictable only by copying).
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, VOCAB, (batch, length), generator=g)
    return ids, plant_repeats(ids, seg, g, first_label=1)


def plant_repeats(ids: torch.Tensor, seg: int, g: torch.Generator, first_label: int) -> torch.Tensor:
    """Copy a random ``seg``-token span of each row of ``ids`` (in place) to a random later offset;
    return labels ``[batch, length]``, -100 except on the copy from its ``first_label``-th token."""
    length = ids.shape[1]
    labels = torch.full_like(ids, -100)
    for b in range(ids.shape[0]):
        src = int(torch.randint(0, length // 2 - seg, (), generator=g))
        dst = int(torch.randint(length // 2, length - seg + 1, (), generator=g))
        ids[b, dst : dst + seg] = ids[b, src : src + seg]
        labels[b, dst + first_label : dst + seg] = ids[b, dst + first_label : dst + seg]
    return labels


def copy_model(seed: int = 0) -> Qwen3ForCausalLM:
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(build_config("copy", VOCAB))
    return apply_copy_prior(model, seed=seed)


def copy_accuracy(model, ids, labels) -> float:
    with torch.no_grad():
        pred = model(input_ids=ids).logits[:, :-1].argmax(-1)
    target, mask = labels[:, 1:], labels[:, 1:] != -100
    return (pred[mask] == target[mask]).float().mean().item()


def test_fresh_model_copies_repeated_spans():
    ids, labels = repeated(8)
    prior = copy_model()
    torch.manual_seed(0)
    plain = Qwen3ForCausalLM(build_config("default", VOCAB))
    assert copy_accuracy(prior, ids, labels) > 0.3
    assert copy_accuracy(plain, ids, labels) < 0.01
    with torch.no_grad():
        assert prior(input_ids=ids, labels=labels).loss < 3.0 < plain(input_ids=ids, labels=labels).loss


def separated(batch: int, length: int = 128, seg: int = 24, sep: int = 5, seed: int = 0):
    """Like :func:`repeated`, but every third token is the same separator ``sep`` (as newlines
    and spaces are in terminal output): after a separator only the token before it tells where
    in the source the copy is, so a one-token match cannot continue the copy and a bigram can.

    Returns ``(ids, labels, after_sep)``; ``after_sep`` ``[batch, length - 1]`` marks the
    predictions made at a separator.
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, VOCAB, (batch, length), generator=g)
    ids[:, ::3] = sep
    labels = plant_repeats(ids, seg, g, first_label=2)
    after_sep = (labels[:, 1:] != -100) & (ids[:, :-1] == sep)
    return ids, labels, after_sep


def copied(model, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(prediction, source)``, each ``[batch, seq_len]``: the model's argmax next token, and the
    token right where the induction head (layer 2, query head 0) attends most, which it copies."""
    model.set_attn_implementation("eager")
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    return out.logits.argmax(-1), torch.gather(ids, 1, out.attentions[1][:, 0].argmax(-1))


def test_fresh_model_continues_a_copy_after_a_separator():
    ids, labels, after_sep = separated(8)
    pred, source = copied(copy_model(), ids)
    assert after_sep.sum() > 40
    # A one-token match scores ~0 here. The head finds the place (measured 0.98); the prediction
    # is right less often (0.78): at step 0 the current token's own embedding, still in the
    # residual stream, competes with the copy, until training suppresses it.
    assert (source[:, :-1] == labels[:, 1:])[after_sep].float().mean() > 0.95
    assert (pred[:, :-1] == labels[:, 1:])[after_sep].float().mean() > 0.7


def shared_bigrams(batch: int, variants: int = 4, seed: int = 0):
    """Template lines as in generated files ("Send the report today." / "... by Friday."): each
    row holds ``variants`` spans ``P_i S T X_i`` with one bigram ``S T`` common to all, then
    repeats one of them, ``P_k S T``. A bigram match points at every ``X_i`` alike; only the
    token before the bigram tells ``X_k``.

    Returns ``(ids [batch, length], target X_k [batch])``; the last position predicts the target.
    """
    g = torch.Generator().manual_seed(seed)
    rows, targets = [], []
    for _ in range(batch):
        fill = torch.randint(10, VOCAB, (40,), generator=g).tolist()
        s, t = torch.randint(10, VOCAB, (2,), generator=g).tolist()
        heads = torch.randint(10, VOCAB, (variants,), generator=g).tolist()
        tails = torch.randint(10, VOCAB, (variants,), generator=g).tolist()
        ids = fill[:8]
        for i, (p, x) in enumerate(zip(heads, tails)):
            ids += [p, s, t, x, *fill[8 + 4 * i : 12 + 4 * i]]
        k = int(torch.randint(0, variants, (), generator=g))
        rows.append(ids + [heads[k], s, t])
        targets.append(tails[k])
    return torch.tensor(rows), torch.tensor(targets)


def test_fresh_model_continues_a_copy_past_a_shared_bigram():
    ids, targets = shared_bigrams(64)
    _, source = copied(copy_model(), ids)
    # Measured 0.73; a bigram match is 1 in 4 (0.25 with the bigram head this replaced).
    assert (source[:, -1] == targets).float().mean() > 0.6


SINK, OBS, THINK, THINK_END, NL, LS, SP, HOME = range(1, 9)


def state_lookups(count: int, seed: int = 0, keys: int = 8, piece: int = 6):
    """Sequences shaped like a world model's SFT input at the start of an answer: a state
    description of ``keys`` pieces, each under a header ``ls ~/KEY`` and a newline, then a
    rationale restating one header, ``<think>ls ~/KEY</think>``, a newline and
    ``<predicted_observation>`` and a newline. Token ids are random above 8; ``SINK`` opens every
    turn. Returns ``[(ids, first token of the piece under KEY)]``."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        names = torch.randint(10, VOCAB, (keys,), generator=g).tolist()
        pieces = torch.randint(10, VOCAB, (keys, piece), generator=g).tolist()
        ids = [SINK, *torch.randint(10, VOCAB, (20,), generator=g).tolist()]
        for name, body in zip(names, pieces):
            ids += [LS, SP, HOME, name, NL, *body, NL]
        ids += [SINK, *torch.randint(10, VOCAB, (10,), generator=g).tolist()]
        pick = int(torch.randint(0, keys, (), generator=g))
        ids += [THINK, LS, SP, HOME, names[pick], THINK_END, NL, OBS, NL]
        out.append((ids, pieces[pick][0]))
    return out


def test_selection_head_starts_the_answer_under_the_restated_header():
    def model(select: bool) -> Qwen3ForCausalLM:
        torch.manual_seed(0)
        m = Qwen3ForCausalLM(build_config("copy", VOCAB))
        return apply_copy_prior(m, seed=0, select_after=OBS if select else None,
                                sink=SINK if select else None)

    def first_token_accuracy(m) -> float:
        cases = state_lookups(32)
        with torch.no_grad():
            return sum(int(m(input_ids=torch.tensor([ids])).logits[0, -1].argmax()) == first
                       for ids, first in cases) / len(cases)

    with_head, without = model(True), model(False)
    assert first_token_accuracy(with_head) > 0.9  # measured 1.00
    assert first_token_accuracy(without) < 0.1  # nothing points at the piece
    # The gate: elsewhere the head attends the sinks (value 0), so copying is untouched by it.
    ids, labels = repeated(8)
    ids[:, 0] = SINK
    silenced = model(True)
    with torch.no_grad():
        silenced.model.layers[1].self_attn.o_proj.weight[:, 3 * 64 : 4 * 64] = 0
    assert copy_accuracy(with_head, ids, labels) == pytest.approx(
        copy_accuracy(silenced, ids, labels), abs=0.02)


def test_training_keeps_the_circuit():
    """AdamW at the quickstart's learning rate drives the copy loss down, not back to chance."""
    model = copy_model(seed=1)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.1, betas=(0.9, 0.95))
    for step in range(30):
        for group in opt.param_groups:
            group["lr"] = 2e-3 * min(1.0, (step + 1) / 20)
        ids, labels = repeated(8, seed=100 + step)
        model(input_ids=ids, labels=labels).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
    ids, labels = repeated(8, seed=7)
    with torch.no_grad():
        assert model(input_ids=ids, labels=labels).loss < 1.5  # measured 1.31; chance: ln 3072 = 8.0
    assert copy_accuracy(model, ids, labels) > 0.85  # measured 0.875; chance: 1/3072


def test_checkpoint_round_trip(tmp_path):
    ids, _ = repeated(2)
    model = copy_model()
    model.save_pretrained(tmp_path)
    again = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert again.config.rope_parameters["rope_theta"] == 1e6
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=ids).logits, model(input_ids=ids).logits)


def test_unsupported_models_are_named():
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=192, num_hidden_layers=2,
                                         num_attention_heads=3, head_dim=64, intermediate_size=64))
    with pytest.raises(ValueError, match="Qwen3-architecture.*LlamaForCausalLM"):
        apply_copy_prior(llama)
    narrow = Qwen3ForCausalLM(build_config("tiny-test", 64))
    with pytest.raises(ValueError, match="head_dim >= 64"):
        apply_copy_prior(narrow)
    with pytest.raises(ValueError, match="sink token"):
        apply_copy_prior(copy_model(), select_after=OBS)
    one_kv = Qwen3ForCausalLM(build_config("default", VOCAB))
    with pytest.raises(ValueError, match="2 key/value heads; got 6 and 1"):
        apply_copy_prior(one_kv, select_after=OBS, sink=SINK)
