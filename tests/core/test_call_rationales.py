"""Rationales of tool calls (core.call_rationales): the call, its check against the tool
schemas, and the earlier turns that made or showed what it refers to."""

from __future__ import annotations

import json

from agentworld.core.call_rationales import call_rationale, check, signatures, sources, values_of

TOOLS = signatures([
    {"name": "create_note", "inputSchema": {"type": "object", "required": ["title", "body"],
     "properties": {"title": {"type": "string"}, "body": {"type": "string"},
                    "tags": {"anyOf": [{"type": "array"}, {"type": "null"}]}}}},
    {"name": "get_note", "parameters": {"type": "object", "required": ["note_id"],
     "properties": {"note_id": {"type": "integer"}}}},
])


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def test_signatures_read_both_wire_forms():
    assert TOOLS == {"create_note": [("title", "string", True), ("body", "string", True),
                                     ("tags", "array|null", False)],
                     "get_note": [("note_id", "integer", True)]}


def test_check_names_each_problem_against_the_schema():
    assert check("get_note", {"note_id": 3}, TOOLS) == "arguments match the schema of get_note"
    assert check("open", {}, TOOLS) == "unknown tool open; tools: create_note, get_note"
    assert check("get_note", {"note_id": True, "x": 1}, TOOLS) == (
        "argument x is not in the schema (valid: note_id); argument note_id should be "
        "integer, got boolean")
    assert check("create_note", {"body": 2, "tags": None}, TOOLS) == (
        "missing required argument title; argument body should be string, got integer")


def test_values_and_their_sources_in_earlier_calls_and_responses():
    assert values_of({"a": "Rome", "b": [3, "xy"], "c": {"d": True, "e": 12}}) == {"Rome", "3", "12"}
    history = [(call("create_note", title="Rome", body="b"), "listing"),
               (call("create_note", title="Oslo", body="b"), '{"id": 3, "title": "Rome"}'),
               (call("list_notes"), '{"id": 4}'),
               (call("list_notes"), '{"ids": [13, 3.5, 4]}')]
    # turn 1's call names "Rome", turn 1's response (the observation before turn 2) shows 3;
    # 13 and 3.5 are not 3
    assert sources({"Rome", "3"}, history) == [0]
    assert sources({"4"}, history) == [1, 2]  # turn 2's response, turn 3's response
    assert sources(set(), history, extra=[3, 0]) == [0, 3]
    paths = [("x", "listing"), ("y", 'File "/home/agent/pkg/a.py", line 45, in f')]
    assert sources({"/home/agent", "45"}, paths) == []  # a longer path; a traceback's line
    assert sources({"/home/agent/pkg/a.py"}, paths) == [0]


def test_call_rationale_lines_and_malformed_calls():
    history = [(call("create_note", title="Rome", body="hot"), "Connected ...")]
    text = call_rationale(call("get_note", note_id=1), history + [
        (call("list_notes"), '{"id": 1, "title": "Rome"}')], TOOLS)
    assert text.splitlines() == [
        'call get_note {"note_id": 1}',
        "check: arguments match the schema of get_note",
        "reads: turn 1",
        'turn 1: {"name": "create_note", "arguments": {"title": "Rome", "body": "hot"}}',
    ]
    fenced = '```json\n{"name": "create_note", "arguments": {"title": "Rome"}}\n```'
    assert call_rationale(fenced, history, TOOLS).splitlines()[1:3] == [
        "check: missing required argument body", "reads: turn 1"]
    indented = [('```json\n{\n  "name": "create_note",\n  "arguments": {"title": "Rome"}\n}\n```',
                 "")]
    assert call_rationale(call("get_note", note_id=1, title="Rome"), indented).splitlines()[-1] \
        == 'turn 1: {"name": "create_note", "arguments": {"title": "Rome"}}'  # compact
    assert call_rationale('{"name": "get_note", "arguments": {', history, TOOLS).startswith(
        "malformed call: the action is not a JSON tool call")
    assert call_rationale(call("x"), (), None) == "call x {}"  # no tools known: no check line
