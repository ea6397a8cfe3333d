"""The pipeline runner: stages ``collect -> cpt -> sft -> rl -> eval -> simulate``.

Every stage finds its implementation by plugin name (domain, trainer, sim
backend, rewards) through :mod:`agentworld.core.plugins`; this module
imports no plugin package. Outputs of a run directory::

    episodes/train.jsonl, episodes/heldout.jsonl   real episodes (JSONL)
    episodes/ood.jsonl                             held-out task/command families (never trained on)
    episodes/realistic.jsonl, episodes/NAME.jsonl  held-out real sources, evaluation sets
                                                   (never trained on; agentworld.app.eval_sets)
    checkpoints/<stage>/                           Hugging Face checkpoints
    metrics.json, report.md, fidelity.png          evaluation report
    replay.md                                      real vs simulated replays
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentworld.app.config import CollectConfig, EvalConfig, PipelineConfig, SimulateConfig, TrainStageConfig
from agentworld.app.datasets_at import episodes_at, url_exists
from agentworld.app.progress_lines import ProgressLines, collect_with_progress, progress_bar
from agentworld.app.tables import print_fidelity
from agentworld.core import domain_base, plugins
from agentworld.core.collect import split
from agentworld.core.io import atomic_write, write_episodes
from agentworld.core.protocols import ConfigurableTrainer
from agentworld.core.rollout import each, rollout


@dataclass
class RunState:
    """What stages hand to each other. ``checkpoint`` is the newest trained model directory."""

    dir: str
    seed: int
    domain: str
    checkpoint: str | None = None
    train_url: str = ""
    heldout_url: str = ""
    ood_url: str = ""
    eval_sets: list[str] = field(default_factory=list)  # [collect] eval_sets
    timings_s: dict[str, float] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    # The eval stage's result: the report is written again at the end with every stage's timing.
    eval_result: Any = None

    def __post_init__(self) -> None:
        self.train_url = self.train_url or f"{self.dir}/episodes/train.jsonl"
        self.heldout_url = self.heldout_url or f"{self.dir}/episodes/heldout.jsonl"
        if not self.ood_url:  # beside the held-out file, as the collect stage writes it
            self.ood_url = self.heldout_url.rsplit("/", 1)[0] + "/ood.jsonl"

    def loss_logs(self) -> dict[str, str]:
        """``{stage: train_log.jsonl URL}`` of the stages that trained here, in the order they
        ran; for a standalone eval, the evaluated checkpoint's own log."""
        logs = {stage: f"{fact['checkpoint']}/train_log.jsonl" for stage, fact in self.facts.items()
                if isinstance(fact, dict) and fact.get("checkpoint")}  # fmt: skip
        if not logs and self.checkpoint:
            logs = {"checkpoint": f"{self.checkpoint}/train_log.jsonl"}
        return logs

    def report_facts(self) -> dict[str, Any]:
        """What ``report.md`` and ``metrics.json`` list atop the scores: facts and timings (s)."""
        return {"facts": self.facts, "timings_s": self.timings_s}


def part_path(url: str) -> str | None:
    """Where a collection writing ``url`` keeps its finished episodes as it goes
    (:class:`~agentworld.core.partfile.PartFile`): ``<url>.part`` for a local path; ``None``
    (no part file, nothing to resume) for other fsspec URLs."""
    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    fs, path = fsspec.core.url_to_fs(url)
    return f"{path}.part" if isinstance(fs, LocalFileSystem) else None


def run_collect(cfg: CollectConfig, state: RunState, console: Console) -> None:
    """Collect real episodes; write the out-of-distribution episodes (held-out task and command
    families, :mod:`agentworld.core.holdout`) and the train / held-out split of the rest.

    Finished episodes go to ``episodes/collect.part`` as they finish, so a rerun of a killed
    pipeline resumes the collection (:func:`agentworld.core.collect.collect`)."""
    from agentworld.core.holdout import check_task_kinds, split_out_of_distribution
    from agentworld.core.options import OptionsError, parse_env_options

    from agentworld.app.eval_sets import check_eval_sets, collect_eval_sets, split_realistic

    domain = plugins.get_domain(state.domain)
    try:
        env_options = parse_env_options(domain, cfg.env_options)
    except OptionsError as e:
        raise OptionsError(f"[collect.env_options] {e}") from None
    check_eval_sets(cfg.eval_sets, domain)  # below: a user's site brings its own task kinds
    domain = domain_base.domain_hooks(domain).for_environment(env_options) or domain
    check_task_kinds(cfg.ood_task_kinds, domain.tasks())
    part = part_path(f"{state.dir}/episodes/collect")
    episodes = collect_with_progress(state.domain, cfg.episodes, console, policies=cfg.policies,
                                     seed=state.seed, max_steps=cfg.max_steps, workers=cfg.workers,
                                     part=part, executor=cfg.executor, address=cfg.ray_address,
                                     env_options=env_options)
    inside, ood = split_out_of_distribution(episodes, cfg.ood_task_kinds, cfg.ood_commands, domain)
    inside, realistic = split_realistic(inside, cfg.realistic_sources)
    train, heldout = split(inside, cfg.heldout_fraction, state.seed)
    write_episodes(state.train_url, train)
    write_episodes(state.heldout_url, heldout)
    if cfg.ood_task_kinds or cfg.ood_commands:
        write_episodes(state.ood_url, ood)
    if cfg.realistic_sources:
        write_episodes(f"{state.ood_url.rsplit('/', 1)[0]}/realistic.jsonl", realistic)
    if part is not None:
        Path(part).unlink(missing_ok=True)
    state.facts["collect"] = {
        "episodes": len(episodes),
        "train_episodes": len(train), "heldout_episodes": len(heldout),
        "train_transitions": sum(len(e.steps) for e in train),
        "heldout_transitions": sum(len(e.steps) for e in heldout),
        "policies": cfg.policies,
    }
    if cfg.ood_task_kinds or cfg.ood_commands:
        state.facts["collect"] |= {
            "ood_episodes": len(ood), "ood_transitions": sum(len(e.steps) for e in ood),
            "ood_task_kinds": cfg.ood_task_kinds, "ood_commands": cfg.ood_commands,
        }
    unmatched = sorted(set(cfg.realistic_sources) - {e.task.kind for e in realistic if e.task})
    if unmatched:
        console.print(f"[yellow]realistic_sources {unmatched} matched no collected episode[/yellow]")
    if cfg.realistic_sources:
        state.facts["collect"] |= {
            "realistic_episodes": len(realistic), "realistic_sources": cfg.realistic_sources,
            "realistic_transitions": sum(len(e.steps) for e in realistic)}
    if cfg.eval_sets:
        state.facts["collect"]["eval_sets"] = collect_eval_sets(
            cfg.eval_sets, state, console, max_steps=cfg.eval_max_steps or cfg.max_steps,
            workers=cfg.workers,
            env_options=env_options)
    console.print(f"collected {len(episodes)} episodes -> {state.train_url}, {state.heldout_url}"
                  + (f", {state.ood_url} ({len(ood)} out of distribution)"
                     if cfg.ood_task_kinds or cfg.ood_commands else ""))


def run_train(stage: str, cfg: TrainStageConfig, state: RunState, console: Console) -> str:
    """Run one training stage; its output checkpoint becomes ``state.checkpoint``.

    A pipeline run is redone as a whole: unless the stage sets ``resume`` (or ``overwrite``
    itself), a checkpoint an earlier run left in the stage's ``output_dir`` is replaced
    (``overwrite``, for trainers that have the option), and the console says so.
    """
    trainer = plugins.get_trainer(cfg.trainer or stage)
    options = cfg.options()
    options.setdefault("output_dir", f"{state.dir}/checkpoints/{stage}")
    options.setdefault("seed", state.seed)
    fields = getattr(getattr(trainer, "config_cls", None), "model_fields", {})
    if "overwrite" in fields and not options.get("resume"):
        options.setdefault("overwrite", True)
        if options["overwrite"] and (Path(options["output_dir"]) / "config.json").is_file():
            console.print(f"{stage}: replacing the checkpoint in {options['output_dir']}")
    if "model" not in options:
        if state.checkpoint is None:
            raise ValueError(f"[{stage}] needs `model` (a preset or checkpoint directory): no earlier stage produced one")
        options["model"] = state.checkpoint
    episodes = episodes_at(state.train_url)
    if not console.is_terminal and options.get("progress") is not False:  # no bar: lines instead
        options.setdefault("callback", ProgressLines(
            stage, lambda line: console.print(line, markup=False, highlight=False)))
    console.print(f"[bold]{stage}[/bold]: {len(episodes)} training episodes, model {options['model']}")
    state.checkpoint = trainer.train(episodes, options)
    state.facts[stage] = {"checkpoint": state.checkpoint, "parameters": count_parameters(state.checkpoint)}
    console.print(f"{stage} checkpoint -> {state.checkpoint}")
    return state.checkpoint


def count_parameters(checkpoint: str) -> int | None:
    """Parameters stored in a checkpoint's ``*.safetensors`` files (read from their JSON headers).

    The safetensors layout (8-byte little-endian header length, then a JSON
    header of tensor shapes) is documented at huggingface/safetensors. Tied
    weights are stored once. Returns ``None`` when no such file exists.
    """
    import fsspec

    fs, root = fsspec.core.url_to_fs(checkpoint)
    files = fs.glob(f"{root}/*.safetensors")
    if not files:
        return None
    total = 0
    for path in files:
        with fs.open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
        for name, tensor in header.items():
            if name != "__metadata__":
                total += math.prod(tensor["shape"])
    return total


def _model_path(cfg: EvalConfig | SimulateConfig, state: RunState) -> str:
    path = cfg.model or state.checkpoint
    if path is None:
        raise ValueError("no model to evaluate: set `model` in the stage or run a training stage first")
    return path


RETRIEVAL_BASELINES = ("nearest",)
"""Baselines that look answers up in the training episodes: left out (with a note in the
report) when ``state.train_url`` names no file."""


def run_eval(cfg: EvalConfig, state: RunState, console: Console) -> dict[str, str]:
    """Score the model and the baselines on held-out real transitions (in distribution, and out
    of distribution when ``state.ood_url`` exists); write the report. Every baseline is loaded
    with ``train_data=state.train_url`` (``None`` when no such file exists: the retrieval-only
    :data:`RETRIEVAL_BASELINES` are then left out)."""
    from agentworld.core.evaluate import OUT_OF_DISTRIBUTION, evaluate, transitions
    from agentworld.core.retrieval_context import card_note
    from agentworld.app.report import write_report

    domain = _optional_domain(state.domain)
    items = transitions(episodes_at(state.heldout_url), domain=domain)[: cfg.max_transitions]
    ood_items = []
    if cfg.ood_max_transitions and url_exists(state.ood_url):
        ood_items = transitions(episodes_at(state.ood_url), domain=domain,
                                split=OUT_OF_DISTRIBUTION)[: cfg.ood_max_transitions]
    from agentworld.app.eval_sets import realistic_items

    real_items = realistic_items(cfg.realistic_max_transitions, [*state.eval_sets, *cfg.eval_sets],
                                 state, domain)
    items += ood_items + real_items
    model_path = _model_path(cfg, state)
    models = {"model": plugins.get_sim_backend(cfg.backend).load(
        model_path, batch_size=cfg.batch_size, max_new_tokens=cfg.max_new_tokens,
        **decoding_options(cfg.num_beams, cfg.allow_hub))}
    # every baseline gets the training episodes; the retrieval-only one indexes them
    train_data = state.train_url if state.train_url and url_exists(state.train_url) else None
    left_out = [name for name in cfg.baselines
                if name in RETRIEVAL_BASELINES and train_data is None]
    for name in cfg.baselines:
        if name not in left_out:
            models[name] = plugins.get_sim_backend(name).load(None, domain=domain,
                                                               train_data=train_data)
    if left_out:
        console.print(f"[yellow]baseline {', '.join(left_out)} left out: no training episodes "
                      "to look answers up in (agentworld eval --train-data URL)[/yellow]")
    rewards = {name: plugins.get_reward(name, **cfg.reward_options.get(name, {}))
               for name in cfg.rewards}
    with progress_bar(console) as bar:
        task = bar.add_task("eval predictions", total=len(items) * len(models))
        result = evaluate(models, items, rewards, domain=domain, batch_size=cfg.batch_size,
                          progress=lambda done, total: bar.update(task, completed=done, total=total))
    decoding = (f"beam search, {cfg.num_beams} beams" if cfg.num_beams > 1 else "greedy") + card_note(model_path)
    scored_as = state.domain if domain is not None else f"{state.domain} (not installed: no domain scorer)"
    state.facts["eval"] = {"model": model_path, "domain": scored_as,
                           "transitions": len(items) - len(ood_items) - len(real_items),
                           "decoding": decoding}
    if ood_items:
        state.facts["eval"]["ood_transitions"] = len(ood_items)
    if train_data is not None and any(name in RETRIEVAL_BASELINES for name in models):
        state.facts["eval"]["retrieval_index"] = train_data
    if left_out:
        state.facts["eval"]["baselines_left_out"] = (
            f"{', '.join(left_out)}: no training episodes given (agentworld eval --train-data URL)")
    for t in real_items:
        key = f"{t.split}_transitions"
        state.facts["eval"][key] = state.facts["eval"].get(key, 0) + 1
    state.eval_result = result
    paths = write_report(result, state.dir, extra=state.report_facts(), loss_logs=state.loss_logs())
    print_fidelity(result, console)
    return paths


def decoding_options(num_beams: int, allow_hub: bool = True) -> dict[str, Any]:
    """Backend load options for ``num_beams`` and ``allow_hub`` (none for greedy decoding and
    hub downloads allowed, the defaults, so any backend loads)."""
    return ({"num_beams": num_beams} if num_beams > 1 else {}) | ({} if allow_hub else {"allow_hub": False})


def _optional_domain(name: str) -> Any:
    try:
        return plugins.get_domain(name)
    except plugins.UnknownPluginError:
        return None


def run_simulate(cfg: SimulateConfig, state: RunState, console: Console) -> str:
    """Replay held-out real episodes' actions in a simulated env; print and save real vs simulated."""
    backend = plugins.get_sim_backend(cfg.backend)
    world_model = backend.load(_model_path(cfg, state), max_new_tokens=cfg.max_new_tokens,
                               **decoding_options(cfg.num_beams, cfg.allow_hub))
    domain = _optional_domain(state.domain)
    env = backend.make_env(world_model, domain=domain, max_steps=cfg.max_steps)
    lines = ["# Real vs simulated replays", ""]
    for episode in episodes_at(state.heldout_url)[: cfg.episodes]:
        real = episode.steps[: cfg.max_steps]
        actions = [step.action.text for step in real]
        [replay] = rollout(  # the real actions, in order, until the simulated episode ends
            [env], each(lambda e: actions[e.num_steps] if e.num_steps < len(actions) else None),
            cfg.max_steps, seeds=[state.seed],
            options=[{"task": episode.task, "system_prompt": episode.system_prompt,
                      "initial_observation": episode.initial_observation.text}])
        table = Table(title=Text(f"episode {episode.id[:8]}: {episode.task.instruction if episode.task else ''}"),
                      show_lines=True)
        for column in ("action", "real observation", "simulated observation"):
            table.add_column(column, overflow="fold")
        lines += [f"## Episode {episode.id}", "", f"Task: {episode.task.instruction if episode.task else '-'}", ""]
        for step, t in zip(real, replay.transitions):
            sim_obs = t.observation
            if not t.info.get("parsed", True):
                sim_obs = f"[unparsed answer, episode truncated] {t.info.get('raw', '')}"
            table.add_row(*map(Text, (step.action.text, step.observation.text, sim_obs)))
            mark = "same" if sim_obs == step.observation.text else "differs"
            lines += [f"### `{step.action.text}` ({mark})", "", "Real:", "```", step.observation.text, "```",
                      "Simulated:", "```", sim_obs, "```", ""]
        console.print(table)
    env.close()
    path = f"{state.dir}/replay.md"
    atomic_write(path, "\n".join(lines))
    return path


def check_stages(config: PipelineConfig, state: RunState) -> None:
    """Resolve every plugin the stages name and validate every training stage's options, so a
    typo fails before training instead of after minutes of it. :func:`run_pipeline` calls it
    after collection: it loads the trainers (torch, transformers, accelerate), and forking sandboxes
    from a process that holds them made collection 1.55x slower (``bench/collect_torch.py``).

    Raises:
        UnknownPluginError: a domain (collect), trainer, sim backend, baseline or reward that is
            not installed.
        ValueError: options a trainer would refuse (unknown keys included), prefixed by the
            stage's table, e.g. ``[sft] invalid SftConfig: unknown option 'lrr'``.
    """
    stages = config.stages()
    if "collect" in stages:
        plugins.get_domain(config.run.domain)
    for stage in stages:
        cfg = getattr(config, stage)
        if stage in ("cpt", "sft", "rl"):
            trainer = plugins.get_trainer(cfg.trainer or stage)
            if isinstance(trainer, ConfigurableTrainer):
                options = {"output_dir": f"{state.dir}/checkpoints/{stage}", "seed": state.seed,
                           "model": "the previous stage's checkpoint", **cfg.options()}
                try:
                    trainer.check_options(options)
                except ValueError as e:
                    raise ValueError(f"[{stage}] {e}") from None
        elif stage in ("eval", "simulate"):
            plugins.get_sim_backend(cfg.backend)
        if stage == "eval":
            for name in cfg.baselines:
                plugins.get_sim_backend(name)
            for name in cfg.rewards:
                plugins.get_reward(name)


def run_pipeline(config: PipelineConfig, console: Console | None = None) -> RunState:
    """Run every stage present in ``config`` in order and return the final state.

    Writes ``run.json`` (stages, timings in seconds, facts) into the run directory.
    """
    console = console or Console()
    state = RunState(dir=config.run.dir.rstrip("/"), seed=config.run.seed, domain=config.run.domain,
                     train_url=config.run.train_data or "", heldout_url=config.run.heldout_data or "",
                     eval_sets=list(config.collect.eval_sets) if config.collect else [])
    start, checked = time.perf_counter(), False
    for stage in config.stages():
        if stage != "collect" and not checked:  # after collection (see check_stages)
            check_stages(config, state)
            checked = True
        t0 = time.perf_counter()
        cfg = getattr(config, stage)
        console.rule(f"stage: {stage}")
        if stage == "collect":
            run_collect(cfg, state, console)
        elif stage in ("cpt", "sft", "rl"):
            run_train(stage, cfg, state, console)
        elif stage == "eval":
            run_eval(cfg, state, console)
        elif stage == "simulate":
            run_simulate(cfg, state, console)
        state.timings_s[stage] = round(time.perf_counter() - t0, 1)
    state.timings_s["total"] = round(time.perf_counter() - start, 1)
    if state.eval_result is not None:  # the report was written before the later stages' timings
        from agentworld.app.report import write_report

        write_report(state.eval_result, state.dir, extra=state.report_facts(),
                     loss_logs=state.loss_logs())
    atomic_write(f"{state.dir}/run.json", json.dumps(
        {"stages": config.stages(), "timings_s": state.timings_s, "facts": state.facts,
         "checkpoint": state.checkpoint}, indent=2))
    return state
