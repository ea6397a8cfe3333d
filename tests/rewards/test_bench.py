"""`agentworld bench`: judge answers parsed robustly, scores checked against hand-computed
values, append-only results that resume, and whole runs against a world model and a judge
served on loopback by this project's own server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agentworld.app.cli import app
from agentworld.rewards.bench.cli import register
from agentworld.rewards.bench.data import load_rows
from agentworld.rewards.bench.evaluation import parse_evaluation, sample_score
from agentworld.rewards.bench.prompts import load_prompts, user_message
from agentworld.rewards.bench.scoring import score
from agentworld.rewards.bench.store import ResultStore
from agentworld.rewards.verdict import parse_scores
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "core"))
from awb_records import card_rows, write_rows  # noqa: E402

if not any(getattr(g, "name", None) == "bench" for g in app.registered_groups):
    register(app)  # as main() does through the register_commands hook

FULL = {"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}


def test_a_brace_inside_a_reason_parses():
    answer = ('<think>draft {"scores": {"format": 1}}</think>Reasoning: the prompt {cwd} is right.\n'
              '<final_evaluation>\n```json\n{"strengths": ["keeps the } and { of the output"], '
              '"weaknesses": ["a reason with a \\" quote }"], "scores": ' + json.dumps(FULL) +
              "}\n```\n</final_evaluation>")
    verdict = parse_evaluation(answer)
    assert verdict["scores"] == FULL
    assert verdict["strengths"] == ["keeps the } and { of the output"]
    # the llm_judge reward (agentworld eval, rl) reads the same answer
    assert parse_scores(answer) == {k: float(v) for k, v in FULL.items()}


@pytest.mark.parametrize(("answer", "scores"), [
    (json.dumps(FULL), FULL),  # flat, as our llm_judge reward asks
    ('{"scores": {"format": "5/5", "factuality": 4.2, "consistency": 4, "realism": 3, '
     '"quality": 4,},}', FULL),  # strings, floats, trailing commas
    ('<final_evaluation>{"scores": {"format": 5, "factuality": 9, "quality": 2}}', {"format": 5, "quality": 2}),
    ("Format: 4\nFactuality: 2", {"format": 4, "factuality": 2}),
    ("I cannot grade this.", None),
    ("", None),
])
def test_judge_answer_variants(answer, scores):
    verdict = parse_evaluation(answer)
    assert (verdict and verdict["scores"]) == scores


def _bench_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_rows(data / "terminal_test.jsonl", card_rows("terminal", 1, 2))
    write_rows(data / "android_test.jsonl", card_rows("android", 2, 2, "prefix") + card_rows("android", 2, 2)[:1])
    return data


def test_scores_match_hand_computed_macro_and_micro(tmp_path):
    data = _bench_dir(tmp_path)
    rows, report = load_rows(data)
    assert [r.key for r in rows] == [("android", 2, 1), ("android", 2, 2), ("terminal", 1, 1), ("terminal", 1, 2)]
    assert len(report.duplicates) == 1
    out = tmp_path / "out"
    ref = {r.key: r.reference for r in rows}
    gens = {  # android: one closed block each (format ok); terminal: exact, then no block at all
        ("android", 2, 1): f"<think>tap</think><predicted_observation>\n{ref[('android', 2, 1)]}\n</predicted_observation>",
        ("android", 2, 2): "<predicted_observation>\nwrong\n</predicted_observation>",
        ("terminal", 1, 1): ref[("terminal", 1, 1)],
        ("terminal", 1, 2): "",
    }
    judged = {
        ("android", 2, 1): {"scores": {d: 5 for d in FULL}, "failed": False},       # 100
        ("android", 2, 2): {"scores": {"format": 5, "quality": 3}, "failed": False},  # 4 -> 75
        ("terminal", 1, 1): {"scores": {d: 3 for d in FULL}, "failed": False},      # 50
        ("terminal", 1, 2): {"scores": {}, "failed": True, "error": "no model generation"},
    }
    with ResultStore(out / "predictions.jsonl") as p, ResultStore(out / "judged.jsonl") as j:
        for (task, id_, turn), gen in gens.items():
            p.append({"task": task, "id": id_, "turn_idx": turn, "gen": gen})
            j.append({"task": task, "id": id_, "turn_idx": turn, **judged[(task, id_, turn)]})
    result = score(rows, out, "tiny")
    judge = result["judge"]
    android, terminal = judge["domains"]["android"], judge["domains"]["terminal"]
    assert android["total"] == pytest.approx((100 + 75) / 2)
    assert terminal["total"] == pytest.approx(50) and terminal["failed"] == 1 and terminal["valid"] == 1
    assert judge["overall_macro"] == pytest.approx((87.5 + 50) / 2)  # mean of domains: 68.75
    assert judge["overall_micro"] == pytest.approx((100 + 75 + 50) / 3)  # mean of samples: 75
    assert android["format"] == pytest.approx(100) and android["factuality"] == pytest.approx(100)
    assert android["quality"] == pytest.approx(((5 + 3) / 2 - 1) / 4 * 100)
    assert sample_score({"format": 5, "quality": 3}) == 75
    rules = result["rules"]
    assert rules["android"]["exact"] == 0.5 and rules["android"]["format_ok"] == 1.0
    assert rules["terminal"]["exact"] == 0.5 and rules["terminal"]["format_ok"] == 0.5
    assert rules["terminal"]["domain_score"] is not None and rules["android"]["domain_score"] is None
    md = (out / "results.md").read_text()
    assert "| tiny | 50.00 | 87.50 | 68.75 | 75.00 |" in md
    assert (out / "drift.png").stat().st_size > 0


def test_store_drops_a_torn_line_and_keeps_keys(tmp_path):
    path = tmp_path / "judged.jsonl"
    path.write_text('{"task": "mcp", "id": 1, "turn_idx": 1, "x": 1}\n{"task": "mcp", "id": 1, "tur')
    with ResultStore(path) as store:
        assert store.torn == 1 and ("mcp", 1, 1) in store and ("mcp", 1, 2) not in store
        store.append({"task": "mcp", "id": 1, "turn_idx": 2, "x": 2})
    assert [json.loads(x)["turn_idx"] for x in path.read_text().splitlines()] == [1, 2]
    path.write_text('not json\n{"task": "mcp", "id": 1, "turn_idx": 1}\n')
    with pytest.raises(ValueError, match=r"judged\.jsonl, line 1: not a bench result"):
        ResultStore(path)


def test_judge_prompts_ours_or_a_directory(tmp_path):
    ours = load_prompts(["terminal", "web", "mcp"])
    assert "Diagnostics" in ours["web"] and "Diagnostics" not in ours["terminal"]
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "judge_system_prompt.txt").write_text("public-style mcp prompt")
    (tmp_path / "web.txt").write_text("flat web prompt")
    assert load_prompts(["mcp", "web"], tmp_path) == {"mcp": "public-style mcp prompt", "web": "flat web prompt"}
    with pytest.raises(FileNotFoundError, match="no judge prompt for domain 'os'"):
        load_prompts(["os"], tmp_path)
    rows, _ = load_rows(_bench_dir(tmp_path / "d"))
    gui = user_message(rows[1], "<think>maybe</think><predicted_observation>x")
    assert "response_end_tag_count: 0" in gui and "# Earlier turns" in gui and "```\nx\n```" in gui
    assert "Diagnostics" not in user_message(rows[2], "x")


# ---- served end to end (trains a tiny judge; about 30 s) ----

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from agentworld.sim.backends.hf import HFBackend
    from agentworld.sim.server import HFChatModel, serve_in_thread
    from bench_judge import save_bench_judge
    from judge_models import save_judge

    root = tmp_path_factory.mktemp("bench-served")
    judge_dir = save_bench_judge(root / "judge")
    world_dir = save_judge(root / "world")  # a random tiny model as the world model
    with serve_in_thread(HFChatModel(HFBackend().load(str(judge_dir))), "judge", max_wait_s=0.05) as judge, \
            serve_in_thread(HFChatModel(HFBackend().load(str(world_dir))), "world", max_wait_s=0.05) as world:
        yield {"judge": judge, "world": world, "world_dir": world_dir, "root": root}


def _run(*args: str):
    result = CliRunner().invoke(app, ["bench", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.mark.slow
def test_bench_run_served_judge_resumes_without_rescoring(served, tmp_path):
    from bench_judge import BENCH_SCORE, judge_prompt_dir

    data = tmp_path / "data"
    write_rows(data / "terminal_test.jsonl", card_rows("terminal", 1, 2) + card_rows("terminal", 3, 1))
    write_rows(data / "android_test.jsonl", card_rows("android", 2, 2))
    write_rows(data / "mcp_test.jsonl", card_rows("mcp", 4, 1))
    prompts = judge_prompt_dir(tmp_path / "prompts")
    out = tmp_path / "out"
    judge_url = served["judge"].base_url
    common = ["--out", str(out), "--judge-base-url", judge_url, "--judge-prompts", str(prompts),
              "--judge-max-tokens", "100", "--max-new-tokens", "8", "--concurrency", "3"]
    # world model through our engine (hf backend on the checkpoint); judge over HTTP
    first = _run("run", str(data), "--model", str(served["world_dir"]), *common)
    judged = [json.loads(x) for x in (out / "judged.jsonl").read_text().splitlines()]
    assert len(judged) == 6 and not any(j["failed"] for j in judged)
    assert all(j["scores"] == FULL and j["judge_raw_output"].startswith("<final_evaluation>") for j in judged)
    scores = json.loads((out / "scores.json").read_text())
    assert scores["judge"]["overall_macro"] == pytest.approx(BENCH_SCORE)
    assert scores["judge"]["overall_micro"] == pytest.approx(BENCH_SCORE)
    assert "| model | 75.00 | 75.00 | 75.00 | 75.00 | 75.00 |" in " ".join(first.output.split("\n"))

    # killed mid-judge: two rows done, the third line torn; the rerun judges the rest only
    lines = (out / "judged.jsonl").read_text().splitlines(keepends=True)
    (out / "judged.jsonl").write_text("".join(lines[:2]) + lines[2][:30])
    batcher = served["judge"].app.state.batcher
    before = sum(batcher.batch_sizes)
    _run("run", str(data), "--model", str(served["world_dir"]), *common)
    assert sum(batcher.batch_sizes) - before == 4  # rows 3..6 only
    keys = [(j["task"], j["id"], j["turn_idx"]) for j in map(json.loads, (out / "judged.jsonl").read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 6
    stats = [json.loads(x) for x in (out / "stats.jsonl").read_text().splitlines()]
    assert [(s["phase"], s["rows"], s["resumed"]) for s in stats] == [
        ("infer", 6, 0), ("judge", 6, 0), ("infer", 0, 6), ("judge", 4, 2)]
    assert stats[1]["prompt_tokens"] > 0 and stats[1]["completion_tokens"] > 0

    # the same rows through the world model served over HTTP (openai backend), other --out
    with pytest.raises(AssertionError, match="holds results made with model"):
        _run("infer", str(data), "--out", str(out), "--model", "world", "--base-url",
             served["world"].base_url)
    out2 = tmp_path / "out2"
    _run("infer", str(data), "--out", str(out2), "--model", "world", "--base-url",
         served["world"].base_url, "--max-new-tokens", "8", "--prompt", "native")
    assert len((out2 / "predictions.jsonl").read_text().splitlines()) == 6


@pytest.mark.slow
def test_an_unparseable_judge_is_retried_then_excluded_and_counted(served, tmp_path):
    from agentworld.sim.backends.hf import HFBackend
    from agentworld.sim.server import HFChatModel, serve_in_thread

    data = tmp_path / "data"
    write_rows(data / "mcp_test.jsonl", card_rows("mcp", 4, 2))
    out = tmp_path / "out"
    with ResultStore(out / "predictions.jsonl") as p:
        p.append({"task": "mcp", "id": 4, "turn_idx": 1, "gen": "{}"})
        p.append({"task": "mcp", "id": 4, "turn_idx": 2, "gen": ""})
    # the world model as judge: it never writes scores
    with serve_in_thread(HFChatModel(HFBackend().load(str(served["world_dir"]))), "random") as bad:
        _run("judge", str(data), "--out", str(out), "--judge-base-url", bad.base_url,
             "--retries", "1", "--judge-max-tokens", "8")
        assert sum(bad.app.state.batcher.batch_sizes) == 2  # one row, tried twice; none for ""
    judged = {j["turn_idx"]: j for j in map(json.loads, (out / "judged.jsonl").read_text().splitlines())}
    assert judged[1]["failed"] and judged[1]["attempts"] == 2 and judged[1]["error"] == "no scores in the judge's answer"
    assert judged[2]["failed"] and judged[2]["error"] == "no model generation"
    result = _run("score", str(data), "--out", str(out))
    assert "judged: 0 valid, 2 failed (excluded)" in " ".join(result.output.split())
    assert json.loads((out / "scores.json").read_text())["judge"]["overall_micro"] is None


@pytest.mark.slow
def test_eval_takes_the_judge_as_one_more_metric(trained_judge_dir, random_judge_dir, tmp_path):
    from agentworld.core.io import write_episodes
    from agentworld.sim.backends.hf import HFBackend
    from agentworld.sim.server import HFChatModel, serve_in_thread
    from agentworld.core.types import Action, Episode, Observation, Step
    from judge_models import JUDGE_VALUE

    prompt = "user@sandbox:~$ "
    steps = [Step(action=Action(text="echo 1"), observation=Observation(text=f"1\n{prompt}")),
             Step(action=Action(text="true"), observation=Observation(text=prompt))]
    heldout = tmp_path / "heldout.jsonl"
    write_episodes(str(heldout), [Episode(id=f"h{i}", domain="terminal", system_prompt="bash",
                                          initial_observation=Observation(text=prompt), steps=steps)
                                  for i in range(2)])
    with serve_in_thread(HFChatModel(HFBackend().load(str(trained_judge_dir))), "judge") as server:
        result = CliRunner().invoke(app, [
            "eval", "--data", str(heldout), "--model", str(random_judge_dir), "--out", str(tmp_path / "ev"),
            "--domain", "terminal", "--max-new-tokens", "8", "--judge-base-url", server.base_url,
            "--judge-model", "judge"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert sum(server.app.state.batcher.batch_sizes) >= 3  # the baselines' well-formed answers
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert "llm_judge" in metrics["metrics"]
    assert metrics["overall"]["copy-previous"]["llm_judge"]["mean"] == pytest.approx(JUDGE_VALUE)


def test_out_refuses_mixed_runs_but_takes_a_new_judge_after_a_reset(tmp_path):
    from agentworld.rewards.bench.runs import check_run_config

    check_run_config(tmp_path, {"model": "a", "prompt": "public"}, results="predictions.jsonl")
    (tmp_path / "predictions.jsonl").write_text('{"task": "mcp", "id": 1, "turn_idx": 1}\n')
    with pytest.raises(ValueError, match="made with model='a', not 'b'"):
        check_run_config(tmp_path, {"model": "b"}, results="predictions.jsonl")
    check_run_config(tmp_path, {"judge_model": "j1"}, results="judged.jsonl")
    check_run_config(tmp_path, {"judge_model": "j2"}, results="judged.jsonl")  # nothing judged yet
    (tmp_path / "judged.jsonl").write_text('{"task": "mcp", "id": 1, "turn_idx": 1}\n')
    with pytest.raises(ValueError, match="judge_model='j2', not 'j3'"):
        check_run_config(tmp_path, {"judge_model": "j3"}, results="judged.jsonl")
    assert json.loads((tmp_path / "run.json").read_text()) == {"model": "a", "prompt": "public", "judge_model": "j2"}
