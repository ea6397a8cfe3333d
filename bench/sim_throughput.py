"""Simulator throughput: five ways to step many simulated episodes, side by side (issue 3).

    uv run python bench/sim_throughput.py                 # default workload, < 5 min on 2 CPU cores
    uv run python bench/sim_throughput.py --full --device cuda --episodes 512

Workload: ``--episodes`` episodes step in lockstep for ``--steps`` environment steps. Each episode
is a ChatML-like token sequence: a system turn holding the shared system prompt and the episode's
own initial observation, then per step a user turn with the action and an assistant turn with the
generated observation (exactly ``--obs-tokens`` tokens: no stop token, greedy). An episode's
prompt at step t+1 is its whole history: prompt_t + observation_t + turn template + action_{t+1}.
Token ids are random (seeded); the model is a random Qwen3-architecture model built from a config.

Arms (one model, one workload, one process):
  B0  ``model.generate`` per episode step, batch 1, full history recomputed every step
  B1  ``model.generate`` on a left-padded batch of all episodes, lockstep, full recompute
  B2  our ``PagedEngine``, prefix caching off, no episode pinning
  B3  our ``PagedEngine``, prefix caching on, episodes pinned between steps
  B4  transformers' continuous batching: one persistent ``ContinuousBatchingManager``
      (page size = our block size, same batch token budget, prefix sharing on)

B0, B1 and B2 keep no state between steps (each step recomputes the whole history), so the cost
of step t depends only on the prompt length at t. By default they are timed on a few sampled
steps (``--sample-steps``; B0 on ``--b0-episodes`` episodes, sequential so its time is linear in
the episode count), fed the histories of the reference arm (the first stateful arm run: B3, else
B4), and their total is interpolated piecewise-linearly over the steps. The report marks such
numbers ``est``. ``--full`` times every arm on every episode and step.

Step latency: the wall time from issuing an episode's step to its observation being available:
one ``generate`` call for B0, the whole lockstep batch for the other arms. Prefix hit rate:
prompt tokens served from cache over prompt tokens queried, over the steps an arm was timed on.
MFU (PaLM, Chowdhery et al. 2022, appendix B): the model FLOPs the workload needs (every history
token run once, logits only where sampled) per second, over a measured dense matmul FLOP/s.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import random
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers import GenerationConfig, PreTrainedModel, Qwen3Config, Qwen3ForCausalLM
from transformers.generation.configuration_utils import ContinuousBatchingConfig
from transformers.generation.continuous_batching.utils import WorkloadHints

ARMS = ("B0", "B1", "B2", "B3", "B4")
STATEFUL = ("B3", "B4")  # arms whose cost at step t depends on what earlier steps left behind
LABELS = {
    "B0": "HF generate, sequential, batch 1",
    "B1": "HF generate, padded batch, lockstep",
    "B2": "PagedEngine, no prefix caching",
    "B3": "PagedEngine, caching + pinning",
    "B4": "HF continuous batching (persistent)",
}
# Issue 3 targets: B3 steps/s over each arm's.
TARGETS = {"B0": 10.0, "B1": 3.0, "B2": 2.0, "B4": 2.0}


# ----------------------------------------------------------------------------------- workload


@dataclass(slots=True)
class Workload:
    """Token ids of every episode, with ChatML-like template ids at the top of the vocabulary.

    Attributes:
        num_episodes, num_steps: Episodes stepped in lockstep, environment steps per episode.
        system_tokens, initial_obs_tokens, action_tokens, obs_tokens: Lengths (tokens) of the
            shared system prompt, each episode's initial observation, each action and each
            generated observation.
        vocab_size: Model vocabulary; the last 8 ids are template ids, content ids lie below.
        seed: Seed of the random content ids.
    """

    num_episodes: int = 64
    num_steps: int = 20
    system_tokens: int = 256
    initial_obs_tokens: int = 128
    action_tokens: int = 16
    obs_tokens: int = 48
    vocab_size: int = 8192
    seed: int = 0
    prefixes: list[list[int]] = field(init=False, repr=False)
    actions: list[list[list[int]]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        top = self.vocab_size - 8

        def ids(n: int) -> list[int]:
            return [rng.randrange(top) for _ in range(n)]

        system = ids(self.system_tokens)
        self.prefixes = [
            [self.start, self.role_system, self.newline, *system, *ids(self.initial_obs_tokens)]
            + [self.end, self.newline]
            for _ in range(self.num_episodes)
        ]
        self.actions = [
            [ids(self.action_tokens) for _ in range(self.num_steps)]
            for _ in range(self.num_episodes)
        ]

    # Template ids: <|endoftext|> <|im_start|> <|im_end|> "\n" system user assistant.
    pad = property(lambda self: self.vocab_size - 1)
    start = property(lambda self: self.vocab_size - 2)
    end = property(lambda self: self.vocab_size - 3)
    newline = property(lambda self: self.vocab_size - 4)
    role_system = property(lambda self: self.vocab_size - 5)
    role_user = property(lambda self: self.vocab_size - 6)
    role_assistant = property(lambda self: self.vocab_size - 7)

    def turn(self, episode: int, step: int) -> list[int]:
        """User turn with the action of ``step`` (0-based), then the assistant header."""
        head = [self.start, self.role_user, self.newline]
        tail = [self.end, self.newline, self.start, self.role_assistant, self.newline]
        return head + self.actions[episode][step] + tail

    def prompt(self, episode: int, observations: Sequence[Sequence[int]]) -> list[int]:
        """Prompt ids ``[seq_len]`` of ``episode`` at step ``len(observations)`` (0-based),
        given its earlier generated observations."""
        ids = list(self.prefixes[episode])
        for step, obs in enumerate(observations):
            ids += self.turn(episode, step) + list(obs) + [self.end, self.newline]
        return ids + self.turn(episode, len(observations))

    def prompt_len(self, step: int) -> int:
        """Prompt length (tokens) at ``step`` (0-based); the same for every episode."""
        turn = self.action_tokens + 8
        return len(self.prefixes[0]) + turn + step * (turn + self.obs_tokens + 2)

    @property
    def max_len(self) -> int:
        """Tokens of an episode after its last step (prompt + observation)."""
        return self.prompt_len(self.num_steps - 1) + self.obs_tokens


def build_model(args: argparse.Namespace, device: torch.device) -> PreTrainedModel:
    """A random Qwen3-architecture causal LM from ``args`` (seeded), in eval mode on ``device``."""
    config = Qwen3Config(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads,
        max_position_embeddings=args.max_positions,
        initializer_range=args.init_range,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    torch.manual_seed(args.seed)
    model = Qwen3ForCausalLM(config).to(device=device, dtype=getattr(torch, args.dtype))
    model.generation_config = GenerationConfig()
    return model.eval()


# -------------------------------------------------------------------------------- measurement


def now(device: torch.device) -> float:
    """``time.perf_counter()`` (seconds) once ``device`` has finished its queued work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def reset_peak_rss(device: torch.device) -> bool:
    """Resets the process's peak resident set size (Linux ``clear_refs``); False where not possible."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """Peak resident set size (bytes) since the last reset (``VmHWM``), else of the process life."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def matmul_flops_per_s(device: torch.device, dtype: torch.dtype, n: int = 2048) -> float:
    """Best measured FLOP/s of an ``[n, n] @ [n, n]`` matmul (``2 n^3`` FLOPs) on ``device``."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(8):
        start = now(device)
        a @ b
        best = min(best, now(device) - start)
    return 2 * n**3 / best


def workload_flops(model: PreTrainedModel, work: Workload) -> float:
    """Forward FLOPs the workload needs: every history token run once through the layers, the
    LM head only where a token is sampled.

    Per token at position p (0-based): ``2 * (linear weights of the layers)`` plus attention
    ``4 * layers * heads * head_dim * (p + 1)`` (QK^T and PV); ``2 * hidden * vocab`` per sampled
    token (Kaplan et al. 2020, table 1, with the causal context counted exactly).
    """
    config = model.config
    linear = sum(
        m.weight.numel() for m in model.model.layers.modules() if isinstance(m, torch.nn.Linear)
    )
    tokens = work.max_len - 1  # the last sampled token is never fed back
    attn_dim = config.num_attention_heads * config.head_dim
    attention = 4 * config.num_hidden_layers * attn_dim * tokens * (tokens + 1) / 2
    head = 2 * config.hidden_size * config.vocab_size * work.num_steps * work.obs_tokens
    return work.num_episodes * (2 * linear * tokens + attention + head)


# --------------------------------------------------------------------------------------- arms

Outputs = tuple[list[list[int]], list[int], list[float] | None]
"""One lockstep step's generated ids ``[batch][obs_tokens]``, prompt tokens served from cache
``[batch]``, and per-episode latencies (seconds) when not the whole step's wall time."""


def hf_config(work: Workload) -> GenerationConfig:
    """Greedy, exactly ``obs_tokens`` new tokens (no end-of-sequence token)."""
    return GenerationConfig(
        max_new_tokens=work.obs_tokens, do_sample=False, eos_token_id=None, pad_token_id=work.pad
    )


@torch.inference_mode()
def hf_generate(
    model: PreTrainedModel, prompts: Sequence[list[int]], work: Workload
) -> list[list[int]]:
    """``model.generate`` on ``[batch]`` prompts, left-padded; returns ``[batch][obs_tokens]`` ids."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), work.pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    out = model.generate(
        input_ids=ids.to(model.device),
        attention_mask=mask.to(model.device),
        generation_config=hf_config(work),
    )
    assert out.shape[1] == width + work.obs_tokens, "every row generates exactly obs_tokens"
    return out[:, width:].tolist()


class HFSequential:
    """B0: ``model.generate`` per episode step, batch 1, the whole history recomputed."""

    stateful = False

    def __init__(self, bench: Bench):
        self.bench, self.model = bench, bench.model()
        self.max_episodes = bench.args.b0_episodes

    def prime(self, step: int) -> None:
        pass

    def step(self, prompts: list[list[int]], episodes: list[int]) -> Outputs:
        ids, latencies = [], []
        for prompt in prompts:
            start = now(self.bench.device)
            ids += hf_generate(self.model, [prompt], self.bench.work)
            latencies.append(now(self.bench.device) - start)
        return ids, [0] * len(prompts), latencies

    def close(self) -> dict:
        return {}


class HFBatch(HFSequential):
    """B1: ``model.generate`` on a left-padded batch of all episodes, the whole history recomputed."""

    def __init__(self, bench: Bench):
        super().__init__(bench)
        self.max_episodes = bench.args.batch_episodes

    def step(self, prompts: list[list[int]], episodes: list[int]) -> Outputs:
        return hf_generate(self.model, prompts, self.bench.work), [0] * len(prompts), None


class Engine(HFSequential):
    """B2 (``caching=False``: no prefix caching, no pinning) and B3 (caching, episodes pinned)
    on our ``PagedEngine``, sized to hold every episode's whole history without eviction."""

    def __init__(self, bench: Bench, *, caching: bool):
        from agentworld.sim.engine import PagedEngine
        from agentworld.sim.sampling import SamplingParams

        super().__init__(bench)
        args, work = bench.args, bench.work
        self.stateful = caching
        self.max_episodes = None if caching else bench.args.batch_episodes
        self.params = SamplingParams(max_new_tokens=work.obs_tokens, temperature=0.0)
        self.engine = PagedEngine(
            self.model,
            stop_token_ids=(),
            block_size=args.block_size,
            num_blocks=num_blocks(bench),
            max_num_batched_tokens=args.max_batched_tokens,
            max_num_seqs=max(work.num_episodes, 1),
            enable_prefix_caching=caching,
            max_positions=self.model.config.max_position_embeddings,
            reuse_gathers=False if args.no_gather_cache else None,
            share_prefix=False if args.no_shared_prefix else None,
        )
        self.pinned: set[str] = set()

    def step(self, prompts: list[list[int]], episodes: list[int]) -> Outputs:
        names = [f"ep{e}" for e in episodes] if self.stateful else None
        outs = self.engine.generate(prompts, self.params, episode_ids=names)
        assert len(outs) == len(prompts), f"{len(outs)} outputs for {len(prompts)} prompts"
        for out in outs:
            if out.error is not None:
                raise RuntimeError(f"engine request failed: {out.error}")
        self.pinned.update(names or ())
        return [list(o.token_ids) for o in outs], [o.num_cached_tokens for o in outs], None

    def close(self) -> dict:
        for name in self.pinned:
            self.engine.close(name)
        return asdict(self.engine.stats)


class HFContinuous(HFSequential):
    """B4: transformers' continuous batching, one persistent manager for the whole run, page size
    = our block size, the same batch token budget, prefix sharing on.

    Its cost at step t depends on the pages earlier steps left hashed. When timed on a sampled
    step, :meth:`prime` first re-creates them (untimed): it prefills each episode's history up to
    the last generated token but one and decodes one token, which hashes exactly the pages the
    real previous step hashes (a request's pages are hashed after each forward pass except the one
    that finishes it).
    """

    stateful = True

    def __init__(self, bench: Bench):
        super().__init__(bench)
        work, self.max_episodes = bench.work, bench.args.batch_episodes
        config = hf_config(work)
        config.eos_token_id = -1  # continuous batching's spelling of "no stop token"
        self.manager = self.model.init_continuous_batching(
            generation_config=config,
            continuous_batching_config=ContinuousBatchingConfig(
                page_size=bench.args.block_size,
                num_blocks=num_blocks(bench),
                max_batch_tokens=bench.args.max_batched_tokens,
                allow_block_sharing=True,
            ),
            workload_hints=WorkloadHints(
                max_prompt_length=work.max_len,
                max_generated_length=work.obs_tokens,
                num_requests=work.num_episodes,
            ),
        )
        self.manager.warmup()  # builds the batch processor and its paged cache
        cache = self.manager.batch_processor.cache
        self.matched: dict[str, int] = {}
        search = cache.search_prefix_match

        def counting_search(request_id: str, prompt_ids: list[int]) -> int:
            self.matched[request_id] = search(request_id, prompt_ids)
            return self.matched[request_id]

        cache.search_prefix_match = counting_search  # counts prefix hits, behaviour unchanged
        self.attn = self.model.config._attn_implementation  # as switched by the manager
        self.counter = 0
        self.manager.start()

    def run(
        self, prompts: list[list[int]], max_new_tokens: int
    ) -> tuple[list[list[int]], list[str]]:
        ids = []
        for prompt in prompts:
            ids.append(f"r{self.counter}")
            self.counter += 1
            self.manager.add_request(
                prompt, request_id=ids[-1], max_new_tokens=max_new_tokens, eos_token_id=-1
            )
        results = {}
        while len(results) < len(ids):
            out = self.manager.get_result(timeout=600)
            if out is None:
                raise RuntimeError("B4: the continuous batching manager returned nothing for 600 s")
            if out.is_finished():
                if out.error is not None:
                    raise RuntimeError(f"B4 request {out.request_id} failed: {out.error}")
                results[out.request_id] = out
        return [list(results[r].generated_tokens) for r in ids], ids

    def prime(self, step: int) -> None:
        if step == 0:
            return
        work, keep = self.bench.work, self.bench.work.obs_tokens - 2
        prompts = [
            self.bench.reference_prompt(e, step - 1) + self.bench.reference[e, step - 1][:keep]
            for e in range(min(self.max_episodes or work.num_episodes, work.num_episodes))
        ]
        self.run(prompts, max_new_tokens=2)  # primes the episodes it is timed on (sampled only)

    def step(self, prompts: list[list[int]], episodes: list[int]) -> Outputs:
        ids, names = self.run(prompts, self.bench.work.obs_tokens)
        return ids, [self.matched.get(r, 0) for r in names], None

    def close(self) -> dict:
        self.manager.stop(block=True)
        self.manager.destroy()
        return {"attn_implementation": self.attn}


ARM_CLASSES = {
    "B0": HFSequential,
    "B1": HFBatch,
    "B2": lambda bench: Engine(bench, caching=False),
    "B3": lambda bench: Engine(bench, caching=True),
    "B4": HFContinuous,
}


def num_blocks(bench: Bench) -> int:
    """KV blocks holding every episode's whole history, plus slack."""
    per_episode = -(-bench.work.max_len // bench.args.block_size) + 1
    return bench.work.num_episodes * per_episode + 64


def engine_available() -> str | None:
    """None when our engine imports, else why not."""
    try:
        from agentworld.sim.engine import PagedEngine  # noqa: F401
    except ImportError as error:  # the engine is optional for B0/B1/B4
        return f"{type(error).__name__}: {error}"
    return None


# ------------------------------------------------------------------------------------ driver


@dataclass(slots=True)
class ArmResult:
    """One arm's measurements, extrapolated to the whole workload where ``estimated``.

    Attributes:
        total_s: Wall time (seconds) of the whole workload (measured, or interpolated).
        measured_s: Wall time actually measured (seconds).
        latencies_s: Step latency (seconds) of every (episode, step) of the workload.
        observations: ``{(episode, step): generated ids}`` of what was run.
        cached, queried: ``{step: prompt tokens}`` served from cache / asked for, per timed step.
    """

    arm: str
    total_s: float
    measured_s: float
    latencies_s: list[float]
    observations: dict[tuple[int, int], list[int]]
    cached: dict[int, int]
    queried: dict[int, int]
    peak_rss: int
    peak_gpu: int
    estimated: bool
    note: str
    extra: dict


@dataclass(slots=True)
class Bench:
    """What every arm shares: the workload, the model, the reference histories."""

    args: argparse.Namespace
    work: Workload
    base_model: PreTrainedModel
    device: torch.device
    reference: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    reference_arm: str | None = None

    def model(self) -> PreTrainedModel:
        """A private copy of the model: arms may switch its attention implementation."""
        return copy.deepcopy(self.base_model)

    def reference_prompt(self, episode: int, step: int) -> list[int]:
        return self.work.prompt(episode, [self.reference[episode, s] for s in range(step)])

    def sample_steps(self) -> list[int]:
        """0-based steps a sampled arm is timed on (the first and the last always)."""
        last = self.work.num_steps - 1
        wanted = {int(s) - 1 for s in self.args.sample_steps.split(",") if s.strip()}
        return sorted({0, last} | {s for s in wanted if 0 <= s <= last})


def interpolate(values: dict[int, float], num_steps: int) -> list[float]:
    """Per-step values ``[num_steps]`` interpolated piecewise-linearly from ``{step: value}``."""
    xs = sorted(values)
    return [float(v) for v in np.interp(range(num_steps), xs, [values[x] for x in xs])]


def run_arm(bench: Bench, name: str) -> ArmResult:
    """Runs arm ``name`` in lockstep and measures it.

    The first arm run steps on its own generated histories through every episode and step (it
    makes the reference). A later arm runs on its own histories too when it is stateful and
    ``--full``; otherwise it is fed the reference histories, timed on ``--full`` or sampled
    steps (B0 also on ``--b0-episodes`` episodes, B1, B2 and B4 on ``--batch-episodes``), and its
    total interpolated over the steps and scaled to all episodes.
    """
    args, work = bench.args, bench.work
    reset_peak_rss(bench.device)
    arm = ARM_CLASSES[name](bench)
    making_reference = not bench.reference
    sampled = not (making_reference or args.full or name == "B3")
    own_history = making_reference or (arm.stateful and not sampled)
    steps = bench.sample_steps() if sampled else list(range(work.num_steps))
    episodes = list(range(work.num_episodes))
    if sampled and arm.max_episodes:
        episodes = episodes[: arm.max_episodes]
    observations: dict[tuple[int, int], list[int]] = {}
    history = observations if own_history else bench.reference
    cost, latency, cached, queried = {}, {}, {}, {}
    latencies: list[float] = []
    measured = 0.0
    priming = 0.0
    for step in steps:
        if sampled:
            start = now(bench.device)
            arm.prime(step)
            priming += now(bench.device) - start
        prompts = [work.prompt(e, [history[e, s] for s in range(step)]) for e in episodes]
        start = now(bench.device)
        ids, hits, per_episode = arm.step(prompts, episodes)
        elapsed = now(bench.device) - start
        for e, out in zip(episodes, ids):
            assert len(out) == work.obs_tokens, f"{name}: {len(out)} tokens, not {work.obs_tokens}"
            observations[e, step] = out
        measured += elapsed
        cost[step] = elapsed * work.num_episodes / len(episodes)
        # A lockstep batch's latency is its whole pass, scaled like its cost when sampled.
        per_episode = per_episode or [cost[step]] * len(episodes)
        latency[step] = sum(per_episode) / len(per_episode)
        latencies += per_episode
        cached[step], queried[step] = sum(hits), sum(len(p) for p in prompts)
        if args.verbose:
            print(f"  {name} step {step + 1}: {elapsed:.2f} s", file=sys.stderr, flush=True)
    peak_rss, peak_gpu = peaks(bench.device)
    extra = arm.close()
    estimated = len(steps) < work.num_steps or len(episodes) < work.num_episodes
    note = ""
    if estimated:
        note = (
            f"timed on {len(episodes)} of {work.num_episodes} episodes x {len(steps)} of"
            f" {work.num_steps} steps"
        )
        if arm.stateful:
            note += f" (+{priming:.1f} s untimed priming)"
        latencies = [
            t for t in interpolate(latency, work.num_steps) for _ in range(work.num_episodes)
        ]
    return ArmResult(
        arm=name,
        total_s=sum(interpolate(cost, work.num_steps)),
        measured_s=measured,
        latencies_s=latencies,
        observations=observations,
        cached=cached,
        queried=queried,
        peak_rss=peak_rss,
        peak_gpu=peak_gpu,
        estimated=estimated,
        note=note,
        extra=extra,
    )


def peaks(device: torch.device) -> tuple[int, int]:
    gpu = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    return peak_rss_bytes(), gpu


# ------------------------------------------------------------------------------ single episode


def single_episode_latency(bench: Bench, repeats: int = 3) -> dict:
    """Step latency (seconds) of episode 0 stepping alone under B3, ``[num_steps]``, the
    median of ``repeats`` episodes (one step is a fraction of a second: a single sample is
    at the mercy of a noisy host): pinning keeps a step's cost nearly flat as the history
    grows."""
    work = bench.work
    runs = []
    for _ in range(repeats):
        arm = Engine(bench, caching=True)
        observations: list[list[int]] = []
        runs.append([])
        for _ in range(work.num_steps):
            start = now(bench.device)
            ids, _, _ = arm.step([work.prompt(0, observations)], [0])
            runs[-1].append(now(bench.device) - start)
            observations += ids
        arm.close()
    latencies = [float(np.median(step)) for step in zip(*runs)]
    second = latencies[min(1, len(latencies) - 1)]
    return {
        "latencies_s": latencies,
        "step2_s": second,
        "last_step": work.num_steps,
        "last_s": latencies[-1],
        "ratio_last_over_step2": latencies[-1] / second,
    }


# ------------------------------------------------------------------------------------ report


def summarise(result: ArmResult, bench: Bench, flops: float, peak_flops: float) -> dict:
    work = bench.work
    num = work.num_episodes * work.num_steps
    lat = np.array(result.latencies_s)
    # Over the steps the arm was timed on (hits jump after step 1: not interpolated).
    cached, queried = sum(result.cached.values()), sum(result.queried.values())
    late = [s for s in result.queried if s >= 4]  # steps 5.. (1-based)
    late_c = sum(result.cached[s] for s in late)
    late_q = sum(result.queried[s] for s in late)
    agree = [
        result.observations[key] == ref
        for key, ref in bench.reference.items()
        if key in result.observations
    ]
    return {
        "arm": result.arm,
        "label": LABELS[result.arm],
        "env_steps_per_s": num / result.total_s,
        "output_tokens_per_s": num * work.obs_tokens / result.total_s,
        "total_s": result.total_s,
        "measured_s": result.measured_s,
        "estimated": result.estimated,
        "prefix_hit_rate": cached / queried,
        "prefix_hit_rate_from_step5": late_c / late_q if late_q else None,
        "cached_tokens_by_step": {s + 1: result.cached[s] for s in sorted(result.cached)},
        "queried_tokens_by_step": {s + 1: result.queried[s] for s in sorted(result.queried)},
        "latency_p50_s": float(np.percentile(lat, 50)),
        "latency_p99_s": float(np.percentile(lat, 99)),
        "peak_rss_bytes": result.peak_rss,
        "peak_gpu_bytes": result.peak_gpu,
        "mfu": flops / result.total_s / peak_flops,
        "same_tokens_as_reference": (
            sum(agree) / len(agree) if agree and result.arm != bench.reference_arm else None
        ),
        "compared_observations": len(agree),
        "note": result.note,
        "extra": result.extra,
    }


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def print_report(report: dict) -> None:
    w, arms = report["workload"], report["arms"]
    print(
        f"\nworkload: {w['num_episodes']} episodes x {w['num_steps']} steps; system {w['system_tokens']}"
        f" + initial observation {w['initial_obs_tokens']} tokens, actions {w['action_tokens']},"
        f" observations {w['obs_tokens']}; final history {w['max_len']} tokens"
    )
    m = report["machine"]
    print(
        f"model: Qwen3 {report['model']['parameters'] / 1e6:.1f}M parameters, {m['dtype']} on"
        f" {m['processor']} ({m['threads']} threads); dense matmul {m['matmul_flops_per_s'] / 1e9:.1f}"
        f" GFLOP/s; workload needs {report['model']['workload_flops'] / 1e12:.2f} TFLOP"
    )
    print(f"reference histories: {report['reference_arm']}\n")
    head = (
        f"{'arm':4} {'':37} {'steps/s':>8} {'tok/s':>8} {'hit':>6} {'hit>=5':>6} {'p50 s':>7}"
        f" {'p99 s':>7} {'RSS MB':>7} {'MFU':>6} {'same':>5}"
    )
    print(head)
    print("-" * len(head))
    for a in arms.values():
        same = a["same_tokens_as_reference"]
        print(
            f"{a['arm']:4} {a['label']:37} {a['env_steps_per_s']:8.2f} {a['output_tokens_per_s']:8.0f}"
            f" {a['prefix_hit_rate']:6.1%} {pct(a['prefix_hit_rate_from_step5']):>6}"
            f" {a['latency_p50_s']:7.3f} {a['latency_p99_s']:7.3f} {a['peak_rss_bytes'] / 2**20:7.0f}"
            f" {a['mfu']:6.2%} {'ref' if same is None else f'{same:.0%}':>5}"
            + ("  est" if a["estimated"] else "")
        )
    print(
        "  same: share of observations identical to the reference arm's; est: total time"
        " interpolated from the timed steps; hit>=5: prefix hit rate from step 5 ('-': fewer steps)"
    )
    for a in arms.values():
        if a["note"]:
            print(
                f"  {a['arm']}: {a['note']} ({a['measured_s']:.1f} s measured, est. total {a['total_s']:.1f} s)"
            )
    for a in arms.values():
        if a["extra"]:
            print(f"  {a['arm']}: " + ", ".join(f"{k} {v}" for k, v in a["extra"].items()))
    for name, skipped in report["skipped"].items():
        print(f"  {name}: skipped ({skipped})")
    if report["ratios"]:
        print("\ntargets (issue 3) are set for the default workload on 2 CPU cores")
        print(
            "B3 steps/s over:",
            "  ".join(
                f"{k} {v:.1f}x (target >= {TARGETS[k]:.0f}x)" for k, v in report["ratios"].items()
            ),
        )
    single = report.get("single_episode")
    if single:
        print(
            f"single episode under B3 (median of 3): step 2 {single['step2_s'] * 1e3:.0f} ms, step"
            f" {single['last_step']} {single['last_s'] * 1e3:.0f} ms, ratio"
            f" {single['ratio_last_over_step2']:.2f} (target <= 1.5)"
        )
    print(f"wall time {report['wall_s']:.0f} s")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    w = p.add_argument_group("workload")
    w.add_argument("--episodes", type=int, default=64)
    w.add_argument("--steps", type=int, default=20)
    w.add_argument("--system-tokens", type=int, default=256)
    w.add_argument("--initial-obs-tokens", type=int, default=128)
    w.add_argument("--action-tokens", type=int, default=16)
    w.add_argument("--obs-tokens", type=int, default=48)
    w.add_argument("--seed", type=int, default=0)
    m = p.add_argument_group("model (Qwen3 architecture, random weights)")
    m.add_argument("--vocab", type=int, default=8192)
    m.add_argument("--hidden", type=int, default=256)
    m.add_argument("--layers", type=int, default=6)
    m.add_argument("--heads", type=int, default=4)
    m.add_argument("--kv-heads", type=int, default=2)
    m.add_argument("--intermediate", type=int, default=1024)
    m.add_argument("--max-positions", type=int, default=None, help="default: fits the workload")
    m.add_argument(
        "--init-range",
        type=float,
        default=0.1,
        help="weight init std (peaked logits: few greedy ties)",
    )
    m.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    m.add_argument("--device", default="cpu")
    m.add_argument("--no-gather-cache", action="store_true",
                   help="engine arms gather every block every step (PagedEngine reuse_gathers=False)")
    m.add_argument("--no-shared-prefix", action="store_true",
                   help="engine arms attend shared prefix blocks per sequence"
                   " (PagedEngine share_prefix=False)")
    m.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    r = p.add_argument_group("run")
    r.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of B0..B4")
    r.add_argument("--full", action="store_true", help="time every arm on every episode and step")
    r.add_argument(
        "--sample-steps",
        default="",
        help="1-based steps B0/B1/B2/B4 are timed on besides the first and the last",
    )
    r.add_argument("--b0-episodes", type=int, default=8, help="episodes B0 is timed on")
    r.add_argument(
        "--batch-episodes",
        type=int,
        default=32,
        help="episodes B1, B2 and B4 are timed on when sampled (B1 and B2 are prefill-bound, ~linear"
        " in it; B4's attention over its whole batch grows faster, so this flatters B4)",
    )
    r.add_argument(
        "--block-size", type=int, default=16, help="KV block / page size (tokens), B2-B4"
    )
    r.add_argument(
        "--max-batched-tokens", type=int, default=2048, help="tokens per forward pass, B2-B4"
    )
    r.add_argument(
        "--matmul-size",
        type=int,
        default=None,
        help="n of the [n, n] matmul peak (default 2048 on CPU, 8192 on CUDA)",
    )
    r.add_argument(
        "--no-single-episode", action="store_true", help="skip the single-episode latency check"
    )
    r.add_argument("-v", "--verbose", action="store_true", help="print each timed step")
    r.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = p.parse_args(argv)
    args.arms = [a.strip().upper() for a in args.arms.split(",") if a.strip()]
    unknown = sorted(set(args.arms) - set(ARMS))
    if unknown:
        p.error(f"unknown arms {unknown}; choose from {', '.join(ARMS)}")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Runs the benchmark; prints the table and returns the report (a JSON-able dict).

    Raises:
        SystemExit: Bad command-line arguments.
    """
    args = parse_args(argv)
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        report = run(args)
    finally:
        torch.set_num_threads(threads)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return report


def processor_name(device: torch.device) -> str:
    """The GPU's name, else the CPU model from ``/proc/cpuinfo`` with the core count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"{platform.processor() or 'cpu'} ({os.cpu_count()} cores)"


def make_bench(args: argparse.Namespace) -> Bench:
    """The workload and the model ``args`` describe.

    Raises:
        SystemExit: ``--max-positions`` cannot hold an episode's whole history.
    """
    device = torch.device(args.device)
    work = Workload(
        num_episodes=args.episodes,
        num_steps=args.steps,
        system_tokens=args.system_tokens,
        initial_obs_tokens=args.initial_obs_tokens,
        action_tokens=args.action_tokens,
        obs_tokens=args.obs_tokens,
        vocab_size=args.vocab,
        seed=args.seed,
    )
    if args.max_positions is None:
        args.max_positions = work.max_len
    if args.max_positions < work.max_len:
        raise SystemExit(
            f"--max-positions {args.max_positions} < final history {work.max_len} tokens"
        )
    return Bench(args=args, work=work, base_model=build_model(args, device), device=device)


def run(args: argparse.Namespace) -> dict:
    """Every selected arm on one workload and model; returns the report."""
    wall = time.perf_counter()
    bench = make_bench(args)
    device, work, model = bench.device, bench.work, bench.base_model
    dtype = getattr(torch, args.dtype)
    matmul_size = args.matmul_size or (8192 if device.type == "cuda" else 2048)
    peak_flops = matmul_flops_per_s(device, dtype, matmul_size)
    flops = workload_flops(model, work)
    hf_generate(model, [work.prompt(0, [])], work)  # warm up kernels and allocator

    rss_per_arm = reset_peak_rss(device)  # False: peaks are of the whole process life
    skipped: dict[str, str] = {}
    missing = engine_available()
    arms = list(args.arms)
    for arm in ("B2", "B3"):
        if missing and arm in arms:
            arms.remove(arm)
            skipped[arm] = f"agentworld.sim.engine unavailable: {missing}"
    # Stateful arms first (B3 before B4): the first arm's histories feed the later ones. B0
    # right after B3: the headline ratio's two arms run close in time on a drifting host.
    order = [a for a in ("B3", "B0", "B4", "B1", "B2") if a in arms]
    results: dict[str, ArmResult] = {}
    for arm in order:
        results[arm] = run_arm(bench, arm)
        if bench.reference_arm is None:
            bench.reference, bench.reference_arm = dict(results[arm].observations), arm
        print(f"{arm} done: {results[arm].measured_s:.1f} s timed", file=sys.stderr, flush=True)

    summaries = {a: summarise(results[a], bench, flops, peak_flops) for a in ARMS if a in results}
    ratios = {}
    if "B3" in summaries:
        b3 = summaries["B3"]["env_steps_per_s"]
        ratios = {a: b3 / summaries[a]["env_steps_per_s"] for a in TARGETS if a in summaries}
    single = None
    if "B3" in results and not args.no_single_episode:
        single = single_episode_latency(bench)
    report = {
        "workload": {
            "num_episodes": work.num_episodes,
            "num_steps": work.num_steps,
            "system_tokens": work.system_tokens,
            "initial_obs_tokens": work.initial_obs_tokens,
            "action_tokens": work.action_tokens,
            "obs_tokens": work.obs_tokens,
            "max_len": work.max_len,
        },
        "model": {
            "parameters": sum(p.numel() for p in model.parameters()),
            "workload_flops": flops,
            "config": {
                k: getattr(model.config, k)
                for k in ("hidden_size", "num_hidden_layers", "vocab_size")
            },
        },
        "machine": {
            "device": str(device),
            "processor": processor_name(device),
            "dtype": args.dtype,
            "threads": torch.get_num_threads(),
            "matmul_flops_per_s": peak_flops,
            "peak_rss_per_arm": rss_per_arm,
            "torch": torch.__version__,
        },
        "reference_arm": bench.reference_arm,
        "arms": summaries,
        "ratios": ratios,
        "skipped": skipped,
        "single_episode": single,
        "wall_s": time.perf_counter() - wall,
    }
    return report


if __name__ == "__main__":
    main()
