"""A server-agnostic explorer of tool environments: any JSON-schema tool list
(:mod:`.explorer`, :mod:`.arguments`, :mod:`.values`, :mod:`.schema_values` know no server or
protocol) and its use on an MCP server that is not one of ours (:mod:`.mcp`, :mod:`.domain`)."""
