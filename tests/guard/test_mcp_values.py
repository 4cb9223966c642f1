"""The MCP server's edges (#56 round 65): a lone surrogate anywhere in a request line, its method included, is
answered with -32602 naming where (the SDK would drop the line without a reply); a tool that fails on a bug says
so to the agent in one bounded line (at most 300 characters of the error), through the server's own tool call."""
from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("mcp")
from citebound import Guard  # noqa: E402
from citebound.serving.mcp_server import build_server, rpc_problem  # noqa: E402


@pytest.mark.parametrize("msg,where", [
    ({"method": "tools/\\ud800call", "params": {}}, "method"),
    ({"method": "tools/call", "params": {"name": "\\udfff"}}, "params.name"),
    ({"method": "tools/call", "params": {"arguments": {"passages": ["ok", "\\ud800"]}}}, "params.arguments.passages[1]"),
])
def test_a_lone_surrogate_is_answered_naming_where_it_is(msg, where):
    line = json.dumps({"jsonrpc": "2.0", "id": 7} | msg).replace("\\\\u", "\\u")  # the escape itself on the wire
    assert "\\ud" in line and "\\\\" not in line
    assert rpc_problem(line) == (7, -32602, f"{where} is not well-formed unicode (a lone surrogate)")


def test_a_well_formed_line_is_left_to_the_sdk():
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "β-lactam"}})
    assert rpc_problem(line) is None


@pytest.mark.parametrize("tool,args,what", [
    ("guard_answer", {"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]}, "guard this answer"),
    ("verify_citation", {"claim": "Statins lower LDL", "passage": "Statins lower LDL."}, "check this citation"),
])
def test_a_tool_that_fails_on_a_bug_says_so_in_one_bounded_line(tool, args, what):
    from mcp.server.mcpserver.exceptions import ToolError

    guard = Guard("lexical", reattributor=None)

    def broken(*a, **kw):  # a bug deep in the guard: an error 5,000 characters long
        raise MemoryError("x" * 5000)

    guard.guard = broken  # guard_answer's whole-answer path
    guard.threshold = broken  # verify_citation's rule (a verifier's own failure is 'unverified', not an error)
    server = build_server(guard)
    with pytest.raises(ToolError) as e:
        asyncio.run(server.call_tool(tool, args))
    text = str(e.value)
    assert f"citebound could not {what}: MemoryError: " in text
    assert text.count("x") - text.split("MemoryError: ")[0].count("x") == 300
