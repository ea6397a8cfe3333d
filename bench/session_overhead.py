"""Per-step host overhead of the simulator at turn 2, 20 and 50 (issue 23).

    uv run python bench/session_overhead.py                # ~1 min on 2 CPU cores
    uv run python bench/session_overhead.py --episodes 16 --turns 50 --repeats 5

What it times: :meth:`agentworld.sim.Simulator.step_many` of ``--episodes`` episodes in lockstep
on an ``hf`` world model (:class:`~agentworld.sim.backends.hf.HFWorldModel`, paged engine)
whose network is replaced by a scripted runner: it returns logits that spell a fixed answer
(``<predicted_observation>`` + ``--obs-tokens`` distinct tokens + ``</predicted_observation>``)
and costs next to nothing, so the wall time of a step is host overhead: chat rendering,
tokenisation, history bookkeeping, scheduling, sampling, decoding and parsing. The time spent
inside the runner is measured and subtracted all the same.

Arms, side by side in one process on the same world model:

* ``history``: the world model seen only through ``predict(requests, episode_ids=...)``: every
  step sends the whole chat history, which is rendered and tokenised again and diffed against
  the episode's pinned tokens (the path before the session API).
* ``session``: the world model's session API (``open_session`` / ``append``): a step sends
  only the new action; only the new tokens are rendered (skipped when this checkout's world
  model has no session API).

With ``--runner real`` the network is real: the engine's own ``ModelRunner`` packs every
forward pass (block tables, additive masks, gathers) and runs the tiny model, and only its
logits are replaced by the scripted answer's, so the answers still parse. The host time of
``ModelRunner.prepare`` (building the batch on the CPU) is then reported per step beside the
time outside the runner; ``--at 2 100 300 --arms session`` shows how it grows with the episode
(issue 35, item 3: it should stay flat within 1.5x). ``--max-positions 4096`` makes the context
fill after ~55 turns (each turn is ~70 tokens): from then on every step is in the context-full
regime, where the session slides its window (``agentworld.sim.backends.hf_session``); each
reported figure is then the *mean* over its window of turns, so that the slides' cost is
spread over the steps between them as it is in a run. ``--slide-target`` sets the share of the
context a slide cuts the history to (default 0.5): lower slides less often.

Output: per arm and turn, milliseconds of host time per lockstep step and microseconds per
episode-step (and, with ``--runner real``, ms of ``prepare`` per step), then the ratio
history / session.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

from agentworld.core.formats import OBS_CLOSE, OBS_OPEN
from agentworld.sim import Simulator
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.sim.backends.hf_session import SLIDE_TARGET

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SYSTEM = (
    "You simulate a Linux terminal in a sandbox. Given the agent's command, predict exactly what "
    "the terminal prints next, the prompt line included. Files persist between commands. "
) * 6
CORPUS = [SYSTEM, "ls -la /tmp && cat notes.md | grep hello", "user@host:~$ echo world > hello.txt"]


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE (~1,000 tokens) with ChatML specials, the observation tags as single
    tokens, and a ChatML chat template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 8, trainer)
    tok.add_tokens([AddedToken(t, normalized=False) for t in (OBS_OPEN, OBS_CLOSE)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHATML
    )


class ScriptedRunner:
    """A ``ModelRunner`` stand-in whose greedy continuation of any prompt is ``answer``.

    The next token depends on the last token only: ``answer[i] -> answer[i + 1]``, anything
    else -> ``answer[0]`` (the answer's tokens are distinct). ``seconds`` sums the time spent
    in :meth:`forward`.
    """

    def __init__(self, answer: Sequence[int], vocab: int, num_blocks: int, block_size: int = 16):
        self.num_blocks, self.block_size, self.vocab = num_blocks, block_size, vocab
        self.first = answer[0]
        self.next = {a: b for a, b in zip(answer, answer[1:], strict=False)}
        self.seconds = 0.0

    def forward(self, items: Sequence) -> torch.Tensor:  # noqa: ANN001 -- ForwardItem
        start = time.perf_counter()
        rows = [self.next.get(i.token_ids[-1], self.first) for i in items if i.need_logits]
        logits = torch.full((len(rows), self.vocab), -10.0)
        if rows:
            logits[torch.arange(len(rows)), torch.tensor(rows)] = 10.0
        self.seconds += time.perf_counter() - start
        return logits

    def copy_block(self, src: int, dst: int) -> None:
        pass


class RealRunner:
    """The engine's real ``ModelRunner`` (real ``prepare``, real forward pass of the tiny model)
    whose logits are replaced by :class:`ScriptedRunner`'s. ``seconds`` sums the time in
    :meth:`forward` (so the bench subtracts it as for the scripted runner) and
    ``prepare_seconds`` the part of it spent in ``ModelRunner.prepare``."""

    def __init__(self, model, script: ScriptedRunner, num_blocks: int):  # noqa: ANN001
        from agentworld.sim.engine.runner import ModelRunner

        self.inner = ModelRunner(model, num_blocks=num_blocks)
        self.num_blocks, self.block_size = num_blocks, self.inner.block_size
        self.script, self.seconds, self.prepare_seconds = script, 0.0, 0.0
        prepare = self.inner.prepare

        def timed_prepare(items):  # noqa: ANN001, ANN202
            start = time.perf_counter()
            out = prepare(items)
            self.prepare_seconds += time.perf_counter() - start
            return out

        self.inner.prepare = timed_prepare

    def forward(self, items: Sequence) -> torch.Tensor:  # noqa: ANN001 -- ForwardItem
        start = time.perf_counter()
        self.inner.forward(items)
        logits = self.script.forward(items)
        self.seconds += time.perf_counter() - start
        return logits

    def copy_block(self, src: int, dst: int) -> None:
        self.inner.copy_block(src, dst)


def build_world_model(args: argparse.Namespace) -> tuple[HFWorldModel, ScriptedRunner]:
    from agentworld.sim.engine import EngineLoop, PagedEngine

    tokenizer = build_tokenizer()
    specials = set(tokenizer.all_special_ids) | set(tokenizer.convert_tokens_to_ids([OBS_OPEN, OBS_CLOSE]))
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"]
    body = [t for t in range(len(tokenizer)) if t not in specials and t not in newline]
    body = body[50 : 50 + args.obs_tokens]
    answer = [tokenizer.convert_tokens_to_ids(OBS_OPEN), *body, tokenizer.convert_tokens_to_ids(OBS_CLOSE)]
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8,
        max_position_embeddings=args.max_positions,
    )
    model = Qwen3ForCausalLM(config).eval()  # never run: the scripted runner stands in for it
    runner = ScriptedRunner(answer, len(tokenizer), num_blocks=args.episodes * 32768 // 16)
    if args.runner == "real":
        runner = RealRunner(model, runner, runner.num_blocks)
    stop = {tokenizer.convert_tokens_to_ids("<|im_end|>")}
    decode = lambda ids: tokenizer.decode(ids)  # noqa: E731
    engine = EngineLoop(PagedEngine(None, runner=runner, stop_token_ids=stop, decode=decode,
                                    max_positions=32768, max_num_seqs=max(args.episodes, 1)))
    wm = HFWorldModel(model, tokenizer, engine=engine, max_new_tokens=args.obs_tokens + 8,
                      slide_target=args.slide_target)
    return wm, runner


class HistoryOnly:
    """The world model seen only through ``predict`` (no session API): the whole history per
    step."""

    def __init__(self, inner: HFWorldModel):
        self.inner = inner

    def predict(self, requests, *, max_new_tokens=None, episode_ids=None):  # noqa: ANN001, ANN201
        return self.inner.predict(requests, max_new_tokens=max_new_tokens, episode_ids=episode_ids)

    def close_episode(self, episode_id: str) -> None:
        self.inner.close_episode(episode_id)

    def fork_episode(self, source: str, new: str) -> None:
        self.inner.fork_episode(source, new)


def run_arm(world_model, runner: ScriptedRunner, args: argparse.Namespace) -> dict[int, float]:  # noqa: ANN001
    """Host seconds per lockstep step at each turn of ``args.at``, one batch of episodes (with
    the real runner also ``-turn``: seconds of ``prepare`` in that step)."""
    samples: dict[int, float] = {}
    sim = Simulator(world_model)
    ids = [sim.open_sync(SYSTEM, f"user@host:~$ (episode {e})") for e in range(args.episodes)]
    for turn in range(1, max(args.at) + 1):
        pairs = [(i, f"cat notes-{turn}.md | grep hello") for i in ids]
        prepare0 = runner.prepare_seconds if isinstance(runner, RealRunner) else 0.0
        forward0, start = runner.seconds, time.perf_counter()
        results = sim.step_many(pairs)
        elapsed = time.perf_counter() - start - (runner.seconds - forward0)
        assert all(info["parsed"] for _, info in results), results[0][1]
        samples[turn] = elapsed
        if isinstance(runner, RealRunner):
            samples[-turn] = runner.prepare_seconds - prepare0
    for i in ids:
        sim.close_sync(i)
    # Each reported turn: the median of it and the turns before it (``--window``), which a
    # busy host disturbs less than one step.
    out = {}
    for t in args.at:
        turns = range(max(1, t - args.window + 1), t + 1)
        stat = statistics.median if args.max_positions >= 32768 else statistics.fmean
        out[t] = stat(samples[k] for k in turns)
        if -t in samples:
            out[-t] = stat(samples[-k] for k in turns)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=8, help="episodes stepped in lockstep")
    p.add_argument("--at", type=int, nargs="+", default=[2, 20, 50], help="turns to report")
    p.add_argument("--obs-tokens", type=int, default=40, help="tokens of each observation")
    p.add_argument("--repeats", type=int, default=3, help="episode batches run per arm")
    p.add_argument("--window", type=int, default=5,
                   help="each reported turn is the median of it and the turns before it")
    p.add_argument("--runner", choices=["scripted", "real"], default="scripted",
                   help="scripted: no network; real: the engine's ModelRunner and the tiny model")
    p.add_argument("--max-positions", type=int, default=32768,
                   help="the model's context (below 32768: the context-full regime, window means)")
    p.add_argument("--slide-target", type=float, default=SLIDE_TARGET,
                   help="share of the context a full history is cut to (HFWorldModel's slide_target)")
    p.add_argument("--arms", nargs="+", choices=["history", "session"],
                   default=["history", "session"], help="arms to run")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    wm, runner = build_world_model(args)
    models = {"history": HistoryOnly(wm)} if "history" in args.arms else {}
    if hasattr(wm, "open_session") and "session" in args.arms:
        models["session"] = wm
    runs: dict[str, list[dict[int, float]]] = {a: [] for a in models}
    for _ in range(args.repeats):  # the arms interleaved, so that a busy host slows both
        for arm, model in models.items():
            runs[arm].append(run_arm(model, runner, args))
    keys = [*args.at, *(-t for t in args.at)] if args.runner == "real" else args.at
    arms = {a: {t: statistics.median(r[t] for r in rs) for t in keys} for a, rs in runs.items()}
    print(f"host overhead per lockstep step of {args.episodes} episodes (median of {args.repeats},"
          f" {args.runner} runner)")
    prep = args.runner == "real"
    print(f"{'turn':>6} " + " ".join(f"{a + ' ms':>12} {a + ' us/ep':>14}"
                                     + (f" {a + ' prepare ms':>18}" if prep else "") for a in arms)
          + ("  history/session" if len(arms) == 2 else ""))
    for t in args.at:
        row = f"{t:>6} " + " ".join(
            f"{arms[a][t] * 1e3:>12.2f} {arms[a][t] * 1e6 / args.episodes:>14.0f}"
            + (f" {arms[a][-t] * 1e3:>18.2f}" if prep else "") for a in arms
        )
        if len(arms) == 2:
            row += f"  {arms['history'][t] / arms['session'][t]:>15.2f}x"
        print(row)


if __name__ == "__main__":
    main()
