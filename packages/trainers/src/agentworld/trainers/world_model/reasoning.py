"""Rationales for SFT with next-state reasoning: one short text per transition.

With reasoning, an SFT target is ``<think>rationale</think>`` followed by
the ``<predicted_observation>`` block (:func:`agentworld.core.formats.wrap_observation`).
Rationales come from

- the domain (``reasoning="domain"``): the domain plugin's
  ``explain(step, previous_state)``, computed from the real transition and
  the structured state before it (:mod:`agentworld.core.rationales`); or
- a teacher (``reasoning="teacher"``): any OpenAI-compatible chat endpoint,
  prompted with our prompts below (or a user template), shown the context,
  the action and the real next observation. Answers are cached in a JSONL
  file keyed by the sha256 of (model, prompts), so a resumed run asks again
  only what it has not got.

Rationales never contain the contract's tags: ``<think>``, ``</think>`` and the
observation tags are removed, so each target has exactly one think block.
"""

from __future__ import annotations

import hashlib
import json
import os
import string
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentworld.core.endpoints import OPENAI_PAIR, resolve_endpoint
from agentworld.core.formats import system_message
from agentworld.core.rationales import (  # the domain's rationales live in core (convert uses them)
    TAGS,
    Rationales,
    check_domain,
    clean,
    domain_rationales,
)
from agentworld.core.types import Episode
from agentworld.trainers.training.config import SftConfig, TeacherSettings

TEACHER_SYSTEM = (
    "You explain how a {domain} environment responds to an agent's action. You are shown the "
    "environment's context, the observation before the action, the action, and the real next "
    "observation. Write the reasoning a simulator of this environment would think before "
    "writing that observation: what the action does to the environment's state and why the "
    "output looks the way it does. At most three sentences, present tense, plain text: no "
    "tags, no code blocks, and do not copy the observation verbatim."
)

TEACHER_USER = """Context:
{context}

Observation before the action:
{previous_observation}

Action:
{action}

Real next observation:
{observation}

Reasoning:"""

PLACEHOLDERS = frozenset({"domain", "context", "previous_observation", "action", "observation"})


__all__ = ["TAGS", "Rationales", "check_domain", "clean", "domain_rationales", "rationales"]


class TeacherError(RuntimeError):
    """The teacher endpoint failed or returned no usable rationale."""


def load_template(path: str | os.PathLike[str] | None) -> str:
    """The teacher's user-prompt template: ours, or the file ``path``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the template uses a placeholder outside :data:`PLACEHOLDERS`.
    """
    if path is None:
        return TEACHER_USER
    text = Path(path).read_text(encoding="utf-8")
    used = {field for _, field, _, _ in string.Formatter().parse(text) if field}
    if used - PLACEHOLDERS:
        raise ValueError(
            f"teacher prompt file {path}: unknown placeholders {sorted(used - PLACEHOLDERS)}; "
            f"valid: {', '.join(sorted(PLACEHOLDERS))}"
        )
    return text


def teacher_prompt(template: str, episode: Episode, turn: int) -> str:
    """The user prompt about ``episode.steps[turn]``."""
    step = episode.steps[turn]
    return template.format(
        domain=episode.domain,
        context=system_message(episode),
        previous_observation=episode.observations()[turn].text,
        action=step.action.text,
        observation=step.observation.text,
    )


def teacher_rationales(
    episodes: Sequence[Episode],
    settings: TeacherSettings,
    cache_file: str | os.PathLike[str] | None = None,
) -> Rationales:
    """Rationales written by a teacher model over an OpenAI-compatible chat endpoint.

    Args:
        episodes: Episodes to explain (one request per step not already cached).
        settings: Endpoint, model, prompt template and sampling options.
        cache_file: JSONL of ``{"key", "rationale"}`` answers, read first and
            appended to (``None``: no cache).

    Raises:
        TeacherError: a request failed, or an answer had no text besides tags.
        ValueError, FileNotFoundError: a bad ``prompt_file``.
    """
    from openai import OpenAI, OpenAIError

    template = load_template(settings.prompt_file)
    jobs = []
    for i, episode in enumerate(episodes):
        system = TEACHER_SYSTEM.format(domain=episode.domain)
        for t in range(len(episode.steps)):
            user = teacher_prompt(template, episode, t)
            key = hashlib.sha256(f"{settings.model}\0{system}\0{user}".encode()).hexdigest()
            jobs.append((i, t, key, system, user))
    cache: dict[str, str] = {}
    if cache_file is not None and Path(cache_file).is_file():
        for line in Path(cache_file).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                cache[record["key"]] = record["rationale"]
    # a key only from the variable named with base_url, or OPENAI_API_KEY for OPENAI_BASE_URL
    explicit = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    _, key = resolve_endpoint("the teacher", settings.base_url, explicit, [OPENAI_PAIR])
    client = OpenAI(
        base_url=settings.base_url,
        api_key=key or "EMPTY",
        timeout=settings.timeout_s,
        max_retries=2,
    )

    def ask(job: tuple[int, int, str, str, str]) -> str:
        i, t, _, system, user = job
        try:
            reply = client.chat.completions.create(
                model=settings.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=settings.max_tokens,
                temperature=settings.temperature,
            )
        except OpenAIError as e:
            raise TeacherError(
                f"teacher {settings.model} at {settings.base_url} failed: {e}"
            ) from e
        text = clean(reply.choices[0].message.content or "") if reply.choices else ""
        if not text:
            raise TeacherError(
                f"teacher {settings.model} at {settings.base_url} gave no rationale for "
                f"episode {episodes[i].id} turn {t}"
            )
        return text

    todo = [job for job in jobs if job[2] not in cache]
    with ThreadPoolExecutor(settings.concurrency) as pool:
        answers = pool.map(ask, todo)
        sink = open(cache_file, "a", encoding="utf-8") if cache_file is not None else None
        try:
            for job, text in zip(todo, answers, strict=True):
                cache[job[2]] = text
                if sink is not None:
                    sink.write(json.dumps({"key": job[2], "rationale": text}) + "\n")
                    sink.flush()
        finally:
            if sink is not None:
                sink.close()
    out: Rationales = [[] for _ in episodes]
    for i, _, key, _, _ in jobs:
        out[i].append(cache[key])
    return out


def rationales(
    episodes: Sequence[Episode], cfg: SftConfig, out_dir: str | os.PathLike[str] | None = None
) -> Rationales | None:
    """The rationales ``cfg.reasoning`` asks for (``None`` for ``"none"``).

    The teacher's answers are cached in ``out_dir/teacher_rationales.jsonl``.
    """
    if cfg.reasoning == "domain":
        return domain_rationales(episodes, cfg.reasoning_domain)
    if cfg.reasoning == "teacher":
        assert cfg.teacher is not None  # enforced by SftConfig
        cache = Path(out_dir) / "teacher_rationales.jsonl" if out_dir is not None else None
        return teacher_rationales(episodes, cfg.teacher, cache)
    return None
