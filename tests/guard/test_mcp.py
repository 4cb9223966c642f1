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
        init = await session.initialize()
        tools = await session.list_tools()
        out = {"tools": sorted(t.name for t in tools.tools), "listed": tools.tools, "init": init}
        for key, name, args in calls:
            out[key] = await session.call_tool(name, args)
        return out


def payload(result):
    """The one result: JSON text, sent once (no structured copy of it)."""
    assert not result.is_error, result.content
    assert result.structured_content is None and len(result.content) == 1
    return json.loads(result.content[0].text)


def test_the_tools_over_stdio_with_the_sdk_client():
    passages = [p["text"] for p in EXAMPLE["passages"]]
    calls = [
        ("guard", "guard_answer", {"answer": EXAMPLE["answer"], "passages": EXAMPLE["passages"], "detail": "full"}),
        ("compact", "guard_answer", {"answer": EXAMPLE["answer"], "passages": EXAMPLE["passages"]}),
        ("bad_detail", "guard_answer", {"answer": "x [1].", "passages": passages, "detail": "everything"}),
        ("base0", "guard_answer", {"answer": "Aspirin inhibits cyclooxygenase [0].", "passages": passages,
                                   "citation_base": 0}),
        ("verify", "verify_citation", {"claim": "Aspirin irreversibly inhibits cyclooxygenase",
                                       "passage": passages[0]}),
        ("no_passages", "guard_answer", {"answer": "x [1].", "passages": [{"title": "no text"}]}),
        ("blank", "guard_answer", {"answer": "Aspirin works [1].", "passages": ["  "]}),
        ("bad_base", "guard_answer", {"answer": "x [1].", "passages": passages, "citation_base": 2}),
        ("bool_base", "guard_answer", {"answer": "x [1].", "passages": passages, "citation_base": True}),  # not 1
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
    # compact by default: the counts and only the citations that did not pass as written, each with why
    small = payload(out["compact"])
    assert small["guarded_answer"] == want_text and "report" not in small
    assert small["counts"] == {k: getattr(want, k) for k in small["counts"]}
    failing = [a for a in want.audit if a.action != "verified"]
    assert [(f["cited"], f["action"]) for f in small["failing"]] == [(a.cited, a.action) for a in failing]
    for f, a in zip(small["failing"], failing):
        assert (f"{a.score:.3g}" in f["why"] and want.rule in f["why"]) if a.action == "flagged" else f["why"]
        if a.action == "reattributed":
            assert f"moved to passage {a.new_pointer}" in f["why"] and f"{a.new_score:.3g}" in f["why"]
    assert len(out["compact"].content[0].text) < len(out["guard"].content[0].text) / 2
    assert payload(out["base0"])["counts"]["verified"] == 1
    blank = payload(out["blank"])  # a blank passage: nothing to check against, so it fails closed
    assert blank["guarded_answer"] == "Aspirin works [1 UNVERIFIED]." and blank["counts"]["unverified"] == 1
    v = payload(out["verify"])  # a similarity score passes or fails a threshold: it does not say "supported"
    assert v["verdict"] == "passes" and 0 < v["score"] <= 1 and "contradicts" in v["score_scale"]
    ev = v["evidence"]
    assert passages[0][ev["start"]:ev["end"]] == ev["text"]
    for key, field in (("no_passages", "passages"), ("bad_base", "citation_base"), ("bool_base", "citation_base"),
                       ("empty_passage", "passage"),
                       ("bad_detail", "detail"),
                       ("missing", "passages")):
        r = out[key]
        assert r.is_error and field in r.content[0].text, (key, r.content)


def test_the_tools_describe_every_input_and_say_they_are_read_only():
    out = asyncio.run(_session([]))
    from citebound import __version__

    assert out["init"].server_info.version == __version__ != ""
    for tool in out["listed"]:
        props = tool.input_schema["properties"]
        assert props and all(p.get("description") for p in props.values()), (tool.name, props)
        assert tool.annotations.read_only_hint and tool.annotations.idempotent_hint
        assert not tool.annotations.destructive_hint and not tool.annotations.open_world_hint
        # the verifier's blind spot is said where the agent meets the tool
        assert "not support" in tool.description and "contradicts" in tool.description
    guard = next(t for t in out["listed"] if t.name == "guard_answer")
    assert "passages[i-1]" in guard.input_schema["properties"]["passages"]["description"]
    base = guard.input_schema["properties"]["citation_base"]
    assert (base["type"], base["minimum"], base["maximum"]) == ("integer", 0, 1)  # and true is refused (strict)


@pytest.mark.parametrize("n,shown", [(199, 199), (200, 200), (201, 201)])
def test_compact_shows_a_claim_whole_up_to_200_characters_and_cuts_past_it(n, shown):
    """A failing citation's claim of n characters: whole up to MAX_CLAIM_SHOWN (200), else its first 200 and an
    ellipsis (201 characters shown)."""
    from citebound.serving.mcp_server import MAX_CLAIM_SHOWN, compact

    assert MAX_CLAIM_SHOWN == 200
    claim = ("w" * (n - 1)) + "."
    _, rep = Guard("lexical").guard(claim + " [9]", ["A passage."])
    got = compact(json.loads(json.dumps(rep.to_dict())))["failing"][0]["claim"]
    assert len(got) == shown and got.endswith("…" if n > 200 else ".")
