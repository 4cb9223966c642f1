"""citebound mcp over stdio, driven by the official MCP SDK's own client: the two tools, their results
against the library's, and tool errors that name the bad field."""
import asyncio
import json
import sys

import pytest

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from citebound import Guard, examples  # noqa: E402

EXAMPLE = json.loads(examples.path().read_text())


async def _session(calls):
    params = StdioServerParameters(command=sys.executable, args=["-m", "citebound.cli.main", "mcp", "--verifier",
                                                                 "lexical"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        out = {"tools": sorted(t.name for t in tools.tools)}
        for key, name, args in calls:
            out[key] = await session.call_tool(name, args)
        return out


def payload(result):
    assert not result.is_error, result.content
    return result.structured_content if result.structured_content else json.loads(result.content[0].text)


def test_the_tools_over_stdio_with_the_sdk_client():
    passages = [p["text"] for p in EXAMPLE["passages"]]
    calls = [
        ("guard", "guard_answer", {"answer": EXAMPLE["answer"], "passages": EXAMPLE["passages"]}),
        ("base0", "guard_answer", {"answer": "Aspirin inhibits cyclooxygenase [0].", "passages": passages,
                                   "citation_base": 0}),
        ("verify", "verify_citation", {"claim": "Aspirin irreversibly inhibits cyclooxygenase",
                                       "passage": passages[0]}),
        ("no_passages", "guard_answer", {"answer": "x [1].", "passages": [{"title": "no text"}]}),
        ("blank", "guard_answer", {"answer": "Aspirin works [1].", "passages": ["  "]}),
        ("bad_base", "guard_answer", {"answer": "x [1].", "passages": passages, "citation_base": 2}),
        ("empty_passage", "verify_citation", {"claim": "x", "passage": ""}),
        ("missing", "guard_answer", {"answer": "x [1]."}),
    ]
    out = asyncio.run(_session(calls))
    assert out["tools"] == ["guard_answer", "verify_citation"]
    # the same Guard the library builds gives the same guarded answer and report
    want_text, want = Guard("lexical").guard(EXAMPLE["answer"], EXAMPLE["passages"])
    got = payload(out["guard"])
    assert got["guarded_answer"] == want_text
    rep = {k: v for k, v in got["report"].items() if k != "guarantee_card"}
    assert rep == {k: v for k, v in json.loads(json.dumps(want.to_dict())).items() if k != "guarantee_card"}
    assert payload(out["base0"])["report"]["verified"] == 1
    blank = payload(out["blank"])  # a blank passage: nothing to check against, so it fails closed
    assert blank["guarded_answer"] == "Aspirin works [1 UNVERIFIED]." and blank["report"]["unverified"] == 1
    v = payload(out["verify"])
    assert v["verdict"] == "supported" and 0 < v["score"] <= 1
    ev = v["evidence"]
    assert passages[0][ev["start"]:ev["end"]] == ev["text"]
    for key, field in (("no_passages", "passages"), ("bad_base", "citation_base"), ("empty_passage", "passage"),
                       ("missing", "passages")):
        r = out[key]
        assert r.is_error and field in r.content[0].text, (key, r.content)
