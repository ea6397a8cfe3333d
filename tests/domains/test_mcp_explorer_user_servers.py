"""The explorer on servers a new user brings (issue 45): an ``env`` wrapper's folder and
variables, argument values a schema and the state seen imply (defaults, files not folders, new
output files, argv arrays, a table's own columns, bounded timeouts), list items' names, and a
chain that does not stall on a tool whose values are unknown."""

from __future__ import annotations

import random

from agentworld.domains.mcp import catalog
from agentworld.domains.mcp.command_line import split_command
from agentworld.domains.mcp.explore.arguments import ArgumentMaker
from agentworld.domains.mcp.explore.explorer import ToolExplorer
from agentworld.domains.mcp.explore.values import (
    ValuePool,
    mine_command_line,
    mine_response,
    names_match,
)


def _tool(name: str, props: dict, required: list[str] | None = None, description: str = "") -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": props,
                            "required": list(props) if required is None else required}}


def _folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "list.txt").write_text("alpha\nbeta\n")
    (tmp_path / "notes.md").write_text("# Notes\n")
    return tmp_path


def test_an_env_wrapper_is_not_the_server(tmp_path):
    server = f"env -i -C {tmp_path} ALLOW_COMMANDS=ls,cat,wc MODE=fast /venv/bin/mcp-shell-server -v"
    line = split_command(server)
    assert line.program == ["/venv/bin/mcp-shell-server", "-v"]
    assert line.variables == {"ALLOW_COMMANDS": "ls,cat,wc", "MODE": "fast"}
    assert line.chdir == str(tmp_path)
    assert catalog.label(server) == "mcp-shell-server"
    assert catalog.label("/usr/bin/env --chdir=/srv -S 'A=1 /v/bin/srv --x'") == "srv"
    assert catalog.label("/venv/bin/mcp-server-time --local-timezone UTC") == "mcp-server-time"
    # env reads options before its settings only: after one, `-C` would be the program
    assert split_command("env A=1 -C /srv srv").program == ["-C", "/srv", "srv"]
    pool = ValuePool()
    mine_command_line(pool, server)
    assert pool.roots == [str(tmp_path)]  # the folder, never the program's own path
    assert pool.get("allow_commands") == ["ls", "cat", "wc"] and pool.get("mode") == ["fast"]
    assert names_match("command", "allow_commands")


def test_arguments_a_schema_and_the_state_imply(tmp_path):
    root = _folder(tmp_path)
    pool = ValuePool()
    mine_command_line(pool, f"env -C {root} ALLOW_COMMANDS=ls,cat /v/bin/srv")
    mine_response(pool, "get_text_file_contents",
                  '{"/x/list.txt": {"ranges": [], "file_hash": "7288337b2e5a"}}')
    mine_response(pool, "get_database_schema", '{"status": "success", "tables": ['
                  '{"name": "sales", "columns": [{"name": "id"}, {"name": "city"}]},'
                  '{"name": "products", "columns": [{"name": "sku"}, {"name": "price"}]}]}')
    assert pool.tables == {"products": ["sku", "price"], "sales": ["id", "city"]}
    edit = _tool("edit_text_file_contents", {
        "path": {"type": "string", "description": "Path to the text file. Must be absolute."},
        "file_hash": {"type": "string"},
        "encoding": {"type": "string", "default": "utf-8"}}, ["path", "file_hash", "encoding"])
    index = _tool("create_index", {"table_name": {"type": "string"},
                                   "column_name": {"type": "string"},
                                   "index_name": {"type": "string"}})
    export = _tool("export_table_to_csv", {"table_name": {"type": "string"},
                                           "output_path": {"type": "string"}})
    shell = _tool("shell_execute", {"command": {"type": "array", "items": {"type": "string"}},
                                    "timeout": {"type": "integer", "minimum": 1}})
    files = {str(root / "list.txt"), str(root / "notes.md")}
    for seed in range(10):
        maker = ArgumentMaker(random.Random(seed), seed)
        args = maker.arguments(edit, pool)
        assert args["path"] in files, args  # a file under the folder: not `src`, not the root
        assert args["file_hash"] == "7288337b2e5a" and args["encoding"] == "utf-8"
        args = maker.arguments(index, pool)
        assert args["table_name"] in pool.tables, args  # an existing table, not a fresh name
        assert args["column_name"] in pool.tables[args["table_name"]], args
        assert args["index_name"] not in pool.tables
        out = maker.arguments(export, pool)["output_path"]
        assert out.startswith(f"{root}/") and out.endswith(".csv") and out not in files
        args = maker.arguments(shell, pool)
        assert args["command"][0] in ("ls", "cat"), args
        assert args["command"][1:] in ([], ["list.txt"], ["notes.md"]), args
        assert args["timeout"] <= 30


def test_a_chain_does_not_stall_on_a_tool_whose_values_are_unknown():
    # the readers show no item: the old explorer called them for ever, never `delete_item`
    tools = [_tool("delete_item", {"item_id": {"type": "string"}}),
             _tool("list_loaded_tables", {}), _tool("get_database_schema", {})]
    explorer = ToolExplorer(tools, 0, chain=["delete_item", "list_loaded_tables"], length=6)
    names = []
    for made in range(6):
        name, _ = explorer.next_call(made)
        names.append(name)
        explorer.observe((name, {}), '{"status": "success", "tables": []}')
    assert names[2] == "delete_item" and names[3] == "list_loaded_tables", names
