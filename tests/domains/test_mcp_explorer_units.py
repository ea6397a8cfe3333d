"""The server-agnostic explorer's parts: schema-driven arguments, values mined from a command
line, responses and errors, call chains, and the coverage of tool episodes."""

from __future__ import annotations

import random
import zoneinfo

import jsonschema
from agentworld.core.tool_coverage import (
    episode_coverage,
    is_error_step,
    is_error_text,
    response_shape,
)
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.mcp.explore.arguments import ArgumentMaker, sql_kind, sql_statement
from agentworld.domains.mcp.explore.explorer import ToolExplorer, chains, goal_text
from agentworld.domains.mcp.explore.values import (
    ValuePool,
    mine_call,
    mine_listing,
    mine_command_line,
    mine_response,
    names_match,
)

SCHEMA = {"type": "object", "required": ["mode", "count", "code", "opts"], "properties": {
    "mode": {"enum": ["fast", "slow"]},
    "count": {"type": "integer", "minimum": 40, "maximum": 45},
    "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
    "opts": {"type": "object", "required": ["level"], "properties": {
        "level": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 0.75}}},
    "tags": {"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 2},
    "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}}
SQLITE = [
    {"name": "read_query", "description": "Execute a SELECT query on the SQLite database",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}},
                     "required": ["query"]}},
    {"name": "write_query", "description": "Execute an INSERT, UPDATE, or DELETE query",
     "inputSchema": {"type": "object", "properties": {"query": {
         "type": "string", "description": "SQL query to execute"}}, "required": ["query"]}},
    {"name": "create_table", "description": "Create a new table in the SQLite database",
     "inputSchema": {"type": "object", "properties": {"query": {
         "type": "string", "description": "CREATE TABLE SQL statement"}}, "required": ["query"]}},
    {"name": "list_tables", "description": "List all tables",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "describe_table", "description": "Get the schema of a table", "inputSchema": {
        "type": "object", "properties": {"table_name": {"type": "string"}},
        "required": ["table_name"]}}]


def test_arguments_follow_the_schema_enums_bounds_patterns_and_required_fields():
    tool = {"name": "configure", "inputSchema": SCHEMA}
    for seed in range(12):
        args = ArgumentMaker(random.Random(seed), seed).arguments(tool, ValuePool())
        jsonschema.validate(args, SCHEMA)  # raises on any violation
        assert {"mode", "count", "code", "opts"} <= set(args)
        assert args["mode"] in ("fast", "slow") and 40 <= args["count"] <= 45


def test_values_typed_by_name_and_description():
    pool = ValuePool()
    mine_command_line(pool, "/venv/bin/srv --repository /srv/repo --db-path=/data/app.db")
    rng = random.Random(3)
    maker = ArgumentMaker(rng, 3)
    git_status = {"name": "git_status", "inputSchema": {"type": "object", "required": ["repo_path"],
                                                         "properties": {"repo_path": {"type": "string"}}}}
    assert maker.arguments(git_status, pool) == {"repo_path": "/srv/repo"}
    clock = {"name": "convert_time", "inputSchema": {"type": "object", "required": ["tz", "time"],
             "properties": {"tz": {"type": "string", "description": "IANA timezone name"},
                            "time": {"type": "string", "description": "24-hour format (HH:MM)"}}}}
    args = maker.arguments(clock, pool)
    assert args["tz"] in zoneinfo.available_timezones()
    hours, minutes = args["time"].split(":")
    assert 0 <= int(hours) < 24 and 0 <= int(minutes) < 60
    assert sql_kind(SQLITE[0], "query", {}) == "select"
    assert sql_kind(SQLITE[1], "query", SQLITE[1]["inputSchema"]["properties"]["query"]) == "write"
    assert sql_kind(SQLITE[2], "query", {}) == "create"
    assert sql_kind({"name": "search", "description": "Search notes"}, "query", {}) is None


def test_sql_statements_use_the_tables_and_columns_seen():
    pool = ValuePool()
    fresh = iter(["orders"]).__next__
    create = sql_statement("create", pool, random.Random(0), lambda _: fresh())
    assert create.startswith("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY")
    assert sql_statement("write", pool, random.Random(0), str) is None  # no table known yet
    mine_call(pool, "create_table", {"query": create}, ok=True)
    assert pool.tables == {"orders": ["id", "name", "city", "amount"]}
    writes = {sql_statement("write", pool, random.Random(s), str).split()[0] for s in range(30)}
    assert writes == {"INSERT", "UPDATE", "DELETE"}
    assert "FROM orders" in sql_statement("select", pool, random.Random(1), str)


def test_values_mined_from_responses_and_errors():
    pool = ValuePool()
    mine_response(pool, "list_tables", "[{'name': 'orders'}, {'name': 'users'}]")
    assert set(pool.tables) == {"orders", "users"}
    mine_call(pool, "describe_table", {"table_name": "users"}, ok=True)
    mine_response(pool, "describe_table", "[{'cid': 0, 'name': 'email', 'type': 'TEXT'}]")
    assert pool.tables["users"] == ["email"]
    mine_response(pool, "git_branch", "  master\n* feature-x\n")
    assert pool.get("branch") == ["feature-x", "master"]
    mine_response(pool, "git_log", "Commit: 'a1b2c3d4e5'\nAuthor: ada\nMessage: init\n")
    assert pool.get("commit") == ["'a1b2c3d4e5'"] and "a1b2c3d4e5" in pool.get("sha")
    mine_response(pool, "read_note", "Error: no note 'x'; existing titles: 'budget', 'car'")
    assert {"budget", "car"} <= set(pool.get("suggested"))
    mine_call(pool, "create_note", {"title": "never"}, ok=False)
    assert pool.get("title") == []
    assert names_match("repo_path", "repository") and names_match("table_name", "table")
    assert names_match("files", "file") and not names_match("branch_name", "repository")


def test_chains_build_state_then_read_it():
    found = chains(SQLITE)
    assert ["create_table", "list_tables", "describe_table"] in found
    assert ["write_query", "read_query"] in found  # "query": taken by 3 of 5 tools, links nothing
    text = goal_text("mcp-server-sqlite", ["create_table", "list_tables"], SQLITE)
    assert text.startswith("On mcp-server-sqlite: ") and "(create_table)" in text
    explorer = ToolExplorer(SQLITE, 0, chain=["describe_table"], length=3)
    first = explorer.next_call(0)  # no table known: list them first
    assert first == ("list_tables", {})
    explorer.observe(first, "[{'name': 'orders'}]")
    assert explorer.next_call(1) == ("describe_table", {"table_name": "orders"})


def test_coverage_of_an_episode():
    listing = "Connected to MCP server 'srv'. 3 tools available:\n- a()\n- b()\n- c()"

    def step(tool: str, text: str, error: bool = False) -> Step:
        return Step(action=Action(text=tool), observation=Observation(text=text),
                    info={"tool": tool, "is_error": error})

    episode = Episode(domain="mcp", initial_observation=Observation(text=listing), steps=[
        step("a", '{"x": 1}'), step("a", '{"x": 2}'), step("b", "Error: Only SELECT"),
        step("c", "boom", error=True), step("b", "[{'n': 1}]")])
    cov = episode_coverage(episode)
    assert cov == {"server": "srv", "transitions": 5, "non_error": 3, "non_error_share": 0.6,
                   "tools_listed": 3, "tools_ok": ["a", "b"], "tools_error_only": ["c"],
                   "shapes": 2}
    assert is_error_text("Error executing tool x: y") and is_error_text("Invalid timezone")
    assert is_error_text("ValueError: bad") and not is_error_text("Table created successfully")
    # an error the server reports as data, without the flag (mcp-text-editor's hash mismatch)
    for text, error in [('{"result": "error", "reason": "hash mismatch"}', True),
                        ('{"success": false, "message": "x"}', True),
                        ('{"error": "no such row"}', True), ('{"status": "FAILED"}', True),
                        ('{"result": "ok", "error": null, "hash": "ab"}', False),
                        ('[{"error": "a column named error"}]', False), ('"error"', False)]:
        step = Step(action=Action(text="{}"), observation=Observation(text=text))
        assert is_error_step(step) is error, text
    assert response_shape('{"a": [1, 2]}') == response_shape('{"a": [3]}') == "{a:[int]}"


def test_listed_resources_and_prompts_are_mined():
    pool = ValuePool()
    mine_listing(pool, [{"uri": "memo://insights", "name": "Business Insights Memo"},
                        {"uri": "file:///srv/data/report.csv", "name": "report"}], "resource")
    mine_listing(pool, [{"name": "mcp-demo"}], "prompt")
    assert pool.get("uri") == ["file:///srv/data/report.csv", "memo://insights"]
    assert pool.get("path") == ["/srv/data/report.csv"]
    assert pool.get("resource_name") == ["report", "Business Insights Memo"]
    assert pool.get("prompt_name") == ["mcp-demo"]


def test_a_foreign_server_gets_the_explorer_domain_ours_do_not():
    from agentworld.domains.mcp.domain import McpDomain
    from agentworld.domains.mcp.explore.domain import ExplorerDomain
    from agentworld.domains.mcp.explore.mcp import ExplorerTaskSampler

    domain = McpDomain()
    assert domain.for_environment({}) is None
    assert domain.for_environment({"server": "todo"}) is None
    foreign = domain.for_environment({"server": "/venv/bin/mcp-server-x --root /srv"})
    assert isinstance(foreign, ExplorerDomain) and foreign.name == "mcp"
    assert isinstance(foreign.tasks(), ExplorerTaskSampler)
    assert set(foreign.policies()) >= {"scripted", "random"}


def test_drawing_values_writes_nothing_in_the_working_directory(tmp_path, monkeypatch):
    from agentworld.domains.mcp.explore.schema_values import schema_examples

    monkeypatch.chdir(tmp_path)
    drawn = schema_examples({"type": "string", "pattern": "^q[a-z]{4}[0-9]$"}, 5, 4)
    assert drawn and all(len(v) == 6 and v[0] == "q" and v[-1].isdigit() for v in drawn)
    assert list(tmp_path.iterdir()) == []  # no .hypothesis folder beside the user's data


def test_a_server_that_cannot_be_explored_is_one_line(tmp_path):
    import sys

    import pytest
    from agentworld.core.collect import collect
    from agentworld.core.errors import EnvironmentUnavailableError
    from agentworld.domains.mcp.domain import McpDomain
    from agentworld.domains.mcp.explore.mcp import ExplorerTaskSampler

    part = tmp_path / "episodes.jsonl.part"
    with pytest.raises(EnvironmentUnavailableError) as missing:
        collect(McpDomain(), 2, policies={"scripted": 1}, part=str(part),
                env_options={"server": f"{tmp_path}/no-such-server --root /x"})
    message = str(missing.value)
    assert "\n" not in message and message.startswith("mcp server 'no-such-server' cannot be")
    assert "FileNotFoundError" in message and f"{tmp_path}/no-such-server --root /x" in message
    assert list(tmp_path.iterdir()) == []  # the part file is gone, nothing else written
    script = tmp_path / "empty_server.py"
    script.write_text("from mcp.server.fastmcp import FastMCP\nFastMCP('empty').run()\n")
    with pytest.raises(EnvironmentUnavailableError, match="mcp server 'python' lists no tools"):
        ExplorerTaskSampler(f"{sys.executable} {script}").sample(2, seed=0)


def test_an_expression_gets_arithmetic_not_a_word():
    """mcp-server-calculator (PyPI 0.2.1): its one tool's `expression` got `north-18`, and all
    157 collected calls answered `Unknown identifier` (issue 45 item 3)."""
    import ast

    tool = {"name": "calculate", "description": "Calculates/evaluates the given expression.",
            "inputSchema": {"properties": {"expression": {"title": "Expression", "type": "string"}},
                            "required": ["expression"], "title": "calculateArguments", "type": "object"}}
    maker = ArgumentMaker(random.Random(0))
    for _ in range(20):
        expression = maker.arguments(tool, ValuePool())["expression"]
        tree = ast.parse(expression, mode="eval")
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name)], expression
        assert isinstance(eval(compile(tree, "<expression>", "eval"), {"__builtins__": {}}), (int, float))
