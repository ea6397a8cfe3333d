"""``agentworld collect`` (real episodes) and ``agentworld convert`` (dataset formats)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.app.commands.root import Seed, app, console
from agentworld.core import plugins


def _policy_mix(values: list[str] | None, domain: Any) -> dict[str, float]:
    """``--policy`` values as ``{name: weight}``; without any, weight 1 for each policy of
    ``domain`` (the domain object) but its evaluation sets (a
    :class:`~agentworld.core.protocols.TaskingPolicy` with a finite ``num_tasks``, such as the
    terminal's ``handwritten`` sessions), unless it offers nothing else (the terminal's
    ``history`` replay of ``--set commands=FILE``).

    Raises:
        typer.BadParameter: a value is not ``NAME=WEIGHT`` with a number ``WEIGHT >= 0``.
    """
    if not values:
        from agentworld.core.protocols import TaskingPolicy

        offered = domain.policies()
        mix = {name: 1.0 for name, policy in offered.items()
               if not (isinstance(policy, TaskingPolicy) and policy.num_tasks is not None)}
        return mix or dict.fromkeys(offered, 1.0)
    mix: dict[str, float] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        try:
            weight = float(raw)
        except ValueError:
            weight = -1.0
        if not (name and sep) or not weight >= 0:
            raise typer.BadParameter(f"expected NAME=WEIGHT with a number WEIGHT >= 0, got {item!r}",
                                     param_hint="--policy")
        mix[name] = weight
    return mix


@app.command("collect")
def collect_cmd(
    out: Annotated[str, typer.Option(help="Output JSONL URL for all episodes, e.g. runs/x/episodes.jsonl.")],
    domain: Annotated[str, typer.Option(help="Domain plugin name.")] = "terminal",
    episodes: Annotated[int, typer.Option(min=1, help="Number of episodes.")] = 100,
    policy: Annotated[list[str] | None, typer.Option(
        help="Policy weight as NAME=WEIGHT; repeatable. Default: each policy the domain offers here "
        "(terminal: scripted, random, real; llm once AGENTWORLD_LLM_BASE_URL is set), weight 1; "
        "evaluation sets (terminal: handwritten) only when named.")] = None,
    max_steps: Annotated[int, typer.Option(min=1, help="Steps per episode at most.")] = 12,
    workers: Annotated[int, typer.Option(min=1, help="Environments run in parallel.")] = 2,
    executor: Annotated[str, typer.Option(help=(
        "Where environments run: threads (this process) or ray (Ray actors; needs "
        "the ray extra of agentworld-core)."))] = "threads",
    ray_address: Annotated[str | None, typer.Option(help=(
        "Ray cluster for --executor ray: auto, HOST:PORT or ray://HOST:PORT "
        "(default: a new local cluster)."))] = None,
    seed: Seed = 0,
    overwrite: Annotated[bool, typer.Option(
        help="Replace an existing OUT, and start over instead of resuming from OUT.part.")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help=(
        "Environment option KEY=VALUE for the domain's make_env, typed by the domain (a bad "
        "key or value is an error listing the accepted ones); repeatable (mcp: "
        "server='CMD ARGS' collects from any stdio MCP server)."))] = None,
    progress_every: Annotated[float, typer.Option(
        min=0, help="Seconds between progress lines when output is not a terminal.")] = 30.0,
) -> None:
    """Collect real episodes from a domain's real environment into JSONL.

    Each finished episode is also appended to OUT.part (local OUT): after a crash or kill,
    the same command resumes from there; OUT is written at the end, atomically."""
    from agentworld.core.collect import check_policies
    from agentworld.core.io import check_output, write_episodes
    from agentworld.core.partfile import PartFileError
    from agentworld.app.pipeline import collect_with_progress, part_path

    from agentworld.core.domain_base import domain_hooks

    env_options = _env_options(set_, domain)  # OptionsError (a ValueError): main() prints it
    # the domain its options make (a user's history brings its own policy)
    configured = domain_hooks(plugins.get_domain(domain)).for_environment(env_options) \
        or plugins.get_domain(domain)
    mix = _policy_mix(policy, configured)
    check_policies(configured, mix)
    check_output(out, overwrite=overwrite)
    part = part_path(out)
    if overwrite and part is not None:
        Path(part).unlink(missing_ok=True)
    resumed = _has_part(part)
    if resumed:
        console.print(f"resuming: {part} holds finished episodes of an interrupted run")
    try:
        result = collect_with_progress(domain, episodes, console, every_s=progress_every,
                                       policies=mix, seed=seed,
                                       max_steps=max_steps, workers=workers, part=part,
                                       env_options=env_options, executor=executor,
                                       address=ray_address)
    except PartFileError as e:
        raise PartFileError(f"{e} (--overwrite deletes it)") from None
    write_episodes(out, result)
    if part is not None:
        Path(part).unlink(missing_ok=True)
    console.print(f"wrote {len(result)} episodes ({sum(len(e.steps) for e in result)} transitions) -> {out}")
    from agentworld.core.tool_coverage import coverage_lines

    for text in coverage_lines(result):  # per tool server: non-error share, tools answered
        console.print(text)


def _env_options(pairs: list[str] | None, domain: str) -> dict[str, Any]:
    """``--set KEY=VALUE`` options parsed by ``domain``'s options class
    (:func:`agentworld.core.options.parse_env_options`: ``"5"`` -> ``5`` where an int is
    declared).

    Raises:
        typer.BadParameter: an item without ``=`` or with an empty key.
        agentworld.core.options.OptionsError: ``overwrite`` (the flag ``--overwrite``), an
            option the domain's environment does not take, or a value of the wrong type.
    """
    from agentworld.core.options import OptionsError, parse_env_options

    given: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--set")
        given[key.strip()] = value
    if "overwrite" in given:
        raise OptionsError(f"--set overwrite={given['overwrite']}: replacing OUT is the flag "
                           "--overwrite, not an environment option")
    return parse_env_options(plugins.get_domain(domain), given)


def _has_part(part: str | None) -> bool:
    """True when the part file ``part`` exists with more than its header line."""
    return part is not None and Path(part).is_file() and Path(part).read_bytes().count(b"\n") > 1


@app.command("convert")
def convert_cmd(
    source: Annotated[str, typer.Argument(help="Input URL: .jsonl, .jsonl.gz (.bz2/.xz/.zst) or .parquet.")],
    target: Annotated[str, typer.Argument(
        help="Output URL; its extension picks the container: .jsonl, .jsonl.gz (.bz2/.xz/.zst) or .parquet.")],
    to: Annotated[str | None, typer.Option(
        help="What the rows hold: 'episodes', 'agentworldbench' (one row per evaluated turn) or "
        "'messages' (one chat row per SFT pair, for TRL's SFTTrainer and LLaMA-Factory). "
        "Default: 'agentworldbench' from episodes, else 'episodes'.")] = None,
    layout: Annotated[str, typer.Option(
        help="agentworldbench: rows hold every turn ('full', as the public files) or the turns "
        "up to turn_idx ('prefix').")] = "full",
    reasoning: Annotated[bool, typer.Option(
        help="messages: put the domain's rationale in <think> before each observation block "
        "(as train sft --reasoning does).")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing TARGET.")] = False,
) -> None:
    """Convert between episodes, AgentWorldBench rows and chat messages, in JSONL or Parquet.

    An existing TARGET is refused unless --overwrite; TARGET is written atomically."""
    from agentworld.core import dataformats as df
    from agentworld.core.io import check_output, same_file

    if same_file(source, target):
        raise typer.BadParameter(f"{target} is SOURCE itself; writing it would replace the data "
                                 "being read: choose another TARGET", param_hint="TARGET")
    check_output(target, overwrite=overwrite)  # OutputError (a ValueError): main() prints it

    for url, hint in ((source, "SOURCE"), (target, "TARGET")):
        try:
            df.container_of(url)
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint=hint) from None
    found = df.sniff(source)
    if found is None:
        raise typer.BadParameter(f"{source}'s first row is neither an episode nor an "
                                 "AgentWorldBench record nor a chat 'messages' row; pass an "
                                 "episodes, AgentWorldBench or messages file", param_hint="SOURCE")
    to = to or ("agentworldbench" if found == "episodes" else "episodes")
    if to not in df.KINDS:
        raise typer.BadParameter(f"{to!r}; valid: {', '.join(df.KINDS)}", param_hint="--to")
    if layout not in ("full", "prefix"):
        raise typer.BadParameter(f"{layout!r}; valid: full, prefix", param_hint="--layout")
    same_file_type = source.rsplit(".", 1)[-1] == target.rsplit(".", 1)[-1]
    if found == to and same_file_type:
        other = "episodes" if to != "episodes" else "agentworldbench"
        raise typer.BadParameter(f"{source} is {to} JSONL already: pass --to {other} (or no "
                                 "--to) to convert it, or a TARGET of another file type "
                                 "(.parquet, .jsonl.gz)", param_hint="--to")
    if found == to:  # the same rows in another container
        n = df.write_rows(target, (row for _, row in df.read_rows(source)))
        console.print(f"wrote {n} {to} rows -> {target}")
        return
    episodes, note = df.read_any_episodes(source)
    if note:
        console.print(f"read {note}")
    rationales = None
    if reasoning and to == "messages":
        from agentworld.core.rationales import domain_rationales

        rationales = domain_rationales(episodes)
    n = df.write_as(target, episodes, to, layout=layout, rationales=rationales)  # type: ignore[arg-type]
    what = {"agentworldbench": "AgentWorldBench records", "episodes": "episodes",
            "messages": "chat messages rows (one per SFT pair)"}[to]
    console.print(f"wrote {n} {what} -> {target}")
