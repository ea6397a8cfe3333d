"""Running the infer and judge phases over rows: resumable, bounded concurrency, progress,
tokens and wall time.

Both phases skip the rows whose key their result file already holds, work on the rest with at
most ``concurrency`` requests in flight, append each result as it finishes, and return a
:class:`PhaseStats`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import openai
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from agentworld.rewards.bench.data import PromptMode, Row
from agentworld.rewards.bench.evaluation import parse_evaluation
from agentworld.rewards.bench.prompts import user_message
from agentworld.rewards.bench.store import ResultStore

PREDICTIONS, JUDGED = "predictions.jsonl", "judged.jsonl"


@dataclass(slots=True)
class PhaseStats:
    """One phase's work in this call: rows done now, rows found done before, failures,
    tokens (prompt and completion, where the backend reports them) and wall seconds."""

    phase: str
    rows: int = 0
    resumed: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (f"{self.phase}: {self.rows} rows in {self.seconds:.1f} s "
                f"({self.rows_per_s:.2f} rows/s), {self.resumed} already done, {self.failed} failed, "
                f"{self.prompt_tokens} prompt + {self.completion_tokens} completion tokens")


def _progress(console: Any) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=console, transient=False)


def save_stats(out: Path, stats: PhaseStats) -> None:
    """Add ``stats`` to ``out/stats.jsonl`` (one line per phase call)."""
    with (out / "stats.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({**asdict(stats), "rows_per_s": stats.rows_per_s}) + "\n")


def check_run_config(out: Path, config: dict[str, Any], *, results: str | None = None) -> None:
    """Record what produced ``out``'s results (``out/run.json``) or refuse to mix runs.

    When ``results`` names a result file of ``out`` that holds nothing yet, ``config``'s
    settings replace the recorded ones (a new judge after ``judged.jsonl`` was removed).

    Raises:
        ValueError: ``out`` holds results of another model or prompt mode; the message says
            which setting differs and asks for another ``--out``.
    """
    path = out / "run.json"
    fresh = results is not None and not ((out / results).exists() and (out / results).stat().st_size)
    if path.exists():
        old = {k: v for k, v in json.loads(path.read_text()).items() if not (fresh and k in config)}
        for key, value in config.items():
            if key in old and old[key] != value:
                raise ValueError(f"{out} holds results made with {key}={old[key]!r}, not "
                                 f"{value!r}; resume with the same setting or pass another --out")
        config = {**old, **config}
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1))


def infer(rows: Sequence[Row], world_model: Any, out: Path, *, mode: PromptMode = "public",
          concurrency: int = 8, max_new_tokens: int | None = None, console: Any = None) -> PhaseStats:
    """World-model answers for ``rows`` into ``out/predictions.jsonl``.

    ``world_model`` is any :class:`~agentworld.core.protocols.WorldModel` (a sim backend's
    ``load``); it receives ``concurrency`` requests per ``predict`` call (the ``hf`` engine
    batches them, the ``openai`` backend sends them concurrently).

    Raises:
        Whatever ``predict`` raises for an unreachable endpoint (results so far are kept).
    """
    stats = PhaseStats("infer")
    with ResultStore(out / PREDICTIONS) as store, _progress(console) as bar:
        todo = [r for r in rows if r.key not in store]
        stats.resumed = len(rows) - len(todo)
        task = bar.add_task("infer", total=len(rows), completed=stats.resumed)
        start = time.perf_counter()
        for i in range(0, len(todo), concurrency):
            chunk = todo[i : i + concurrency]
            t0 = time.perf_counter()
            options = {"max_new_tokens": max_new_tokens} if max_new_tokens else {}
            predictions = world_model.predict([r.messages(mode) for r in chunk], **options)
            each = (time.perf_counter() - t0) / len(chunk)
            for row, prediction in zip(chunk, predictions, strict=True):
                error = getattr(prediction, "error", None)
                stats.failed += bool(error) or not prediction.text
                stats.completion_tokens += prediction.num_tokens
                task_, id_, turn = row.key
                store.append({"task": task_, "id": id_, "turn_idx": turn, "gen": prediction.text,
                              "num_tokens": prediction.num_tokens, "seconds": round(each, 4),
                              **({"error": str(error)} if error else {})})
            stats.rows += len(chunk)
            bar.advance(task, len(chunk))
        stats.seconds = time.perf_counter() - start
    save_stats(out, stats)
    return stats


class Judge:
    """An LLM judge behind an OpenAI-compatible endpoint, asked once per row.

    Args:
        base_url, model, api_key: The endpoint; ``model=None`` takes its first listed model.
        prompts: Domain -> judge system prompt (:func:`~agentworld.rewards.bench.prompts.load_prompts`).
        temperature, max_tokens: Sampling of the judge's answers.
        retries: Attempts per row beyond the first, after a failed call or an answer without
            scores; then the row is recorded as failed (excluded from averages, counted).
        timeout: Seconds per request.

    Raises:
        RuntimeError: the endpoint cannot be reached or does not serve ``model`` (checked
            with ``GET /models`` before any row is judged).
    """

    def __init__(self, base_url: str, model: str | None, prompts: dict[str, str], *,
                 api_key: str | None = None, temperature: float = 0.0, max_tokens: int = 1024,
                 retries: int = 2, timeout: float = 300.0):
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "EMPTY",
                                    timeout=timeout, max_retries=0)
        self.base_url, self.prompts, self.retries = base_url, prompts, retries
        self.temperature, self.max_tokens = temperature, max_tokens
        try:
            served = [m.id for m in self.client.models.list()]
        except openai.APIError as error:
            raise RuntimeError(f"judge endpoint {base_url} is unreachable: {error}") from error
        if model is None and not served:
            raise RuntimeError(f"judge endpoint {base_url} lists no model")
        if model is not None and served and model not in served:
            raise RuntimeError(f"judge model {model!r} is not served by {base_url}; it serves: "
                               f"{', '.join(served)}")
        self.model = model or served[0]

    def messages(self, row: Row, answer: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.prompts.get(row.domain, "")},
                {"role": "user", "content": user_message(row, answer)}]

    def __call__(self, row: Row, answer: str) -> dict[str, Any]:
        """The judged result of one row (``failed`` with ``error`` after the retries)."""
        messages, usage, last, error = self.messages(row, answer), [0, 0], "", ""
        for attempt in range(1, self.retries + 2):
            try:
                response = self.client.chat.completions.create(
                    model=self.model, messages=messages, temperature=self.temperature,
                    max_tokens=self.max_tokens)
            except openai.APIError as e:
                error = f"request failed: {e}"
                continue
            if response.usage is not None:
                usage[0] += response.usage.prompt_tokens
                usage[1] += response.usage.completion_tokens
            last = (response.choices[0].message.content or "") if response.choices else ""
            verdict = parse_evaluation(last)
            if verdict is not None:
                return {**verdict, "failed": False, "attempts": attempt, "judge_raw_output": last,
                        "prompt_tokens": usage[0], "completion_tokens": usage[1]}
            error = "no scores in the judge's answer"
        return {"scores": {}, "failed": True, "error": error, "attempts": self.retries + 1,
                "judge_raw_output": last, "prompt_tokens": usage[0], "completion_tokens": usage[1]}


def judge(rows: Sequence[Row], judge_fn: Callable[[Row, str], dict[str, Any]], out: Path, *,
          concurrency: int = 8, console: Any = None) -> PhaseStats:
    """Judge every predicted row into ``out/judged.jsonl`` (rows without a prediction wait).

    A row whose world model produced nothing is recorded failed without a request, as the
    public ``eval.py`` does ("No model generation").
    """
    stats = PhaseStats("judge")
    predictions = ResultStore(out / PREDICTIONS)
    predictions.close()
    with ResultStore(out / JUDGED) as store, _progress(console) as bar, \
            ThreadPoolExecutor(concurrency, thread_name_prefix="bench-judge") as pool:
        ready = [r for r in rows if r.key in predictions.records]
        todo = [r for r in ready if r.key not in store]
        stats.resumed = len(ready) - len(todo)
        task = bar.add_task("judge", total=len(ready), completed=stats.resumed)
        lock = threading.Lock()

        def one(row: Row) -> None:
            gen = predictions.records[row.key].get("gen") or ""
            if not gen:
                result = {"scores": {}, "failed": True, "error": "no model generation", "attempts": 0}
            else:
                result = judge_fn(row, gen)
            task_, id_, turn = row.key
            store.append({"task": task_, "id": id_, "turn_idx": turn, **result})
            with lock:
                count(result)
            bar.advance(task)

        def count(result: dict[str, Any]) -> None:
            stats.failed += result["failed"]
            stats.prompt_tokens += result.get("prompt_tokens", 0)
            stats.completion_tokens += result.get("completion_tokens", 0)
            stats.rows += 1

        start = time.perf_counter()
        for _ in pool.map(one, todo):
            pass
        stats.seconds = time.perf_counter() - start
    save_stats(out, stats)
    return stats
