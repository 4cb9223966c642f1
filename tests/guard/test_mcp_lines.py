"""The MCP server's own edges, in process (citebound/serving/mcp_server.py): which stdin lines it answers itself and
with which id, a lone surrogate anywhere in a request (a list's item included), what an agent is told of a citation
the verifier could not score, and of a guard with no monitor."""
from __future__ import annotations

import asyncio
import json

import pytest
from failing_scorer import Failing

from citebound import Guard
from citebound.guarding.report import GuardInputError
from citebound.serving.mcp_server import _CheckedLines, guard_answer, rpc_problem, verify_citation


def line(**msg):
    return json.dumps({"jsonrpc": "2.0", **msg})


@pytest.mark.parametrize("text,want", [
    # an id of true is no request's id: the error goes out with a null id
    (line(id=True, method="tools/call", params=[1]), (None, -32602, "'params' must be an object")),
    (line(id=0, method="tools/call", params=[1]), (0, -32602, "'params' must be an object")),  # id 0 is an id
    (line(id=3, method="tools/call", params={"arguments": {"passages": ["fine", "\\ud800"]}}),
     (3, -32602, "params.arguments.passages[1] is not well-formed unicode (a lone surrogate)")),
    (line(id=4, method="tools/call", params={"arguments": {"passages": [{"text": "\\udfff x"}]}}),
     (4, -32602, "params.arguments.passages[0].text is not well-formed unicode (a lone surrogate)")),
    (line(id=5, method="tools/call", params={"arguments": {"passages": ["fine", {"text": "ok"}]}}), None),
])
def test_which_lines_the_server_answers_itself_and_with_which_id(text, want):
    assert rpc_problem(text.replace("\\\\u", "\\u")) == want


class _Out:
    def __init__(self):
        self.lines: list[dict] = []

    async def write(self, text):
        self.lines.append(json.loads(text))

    async def flush(self):
        pass


async def _stdin(lines):
    for x in lines:
        yield x + "\n"


def test_a_line_that_is_not_json_is_answered_and_a_bad_notification_is_not():
    """A parse error has no id to answer with: JSON-RPC still answers it (id null); a notification (no id) whose
    params are bad gets no reply; blank lines are skipped; a good line goes on to the SDK."""
    good = line(id=9, method="tools/list")
    out = _Out()

    async def run():
        return [x async for x in _CheckedLines(_stdin(["{not json", "", line(method="n", params=[1]), good]), out)]

    passed = asyncio.run(run())
    assert passed == [good + "\n"]
    assert len(out.lines) == 1 and out.lines[0]["id"] is None and out.lines[0]["error"]["code"] == -32700


@pytest.fixture(scope="module")
def failing_guard():
    return Guard(Failing("boom"), reattributor=None)


def test_a_citation_the_verifier_could_not_score_is_unverified_to_the_agent(failing_guard):
    got = verify_citation(failing_guard, "boom goes the claim", "Statins lower LDL cholesterol.")
    assert (got["score"], got["verdict"], got["evidence"]) == (None, "unverified", None)
    assert got["reason"].startswith("the verifier failed: RuntimeError: verifier failed on this text")
    out = guard_answer(failing_guard, "The boom claim [1]. Statins lower LDL cholesterol [1].",
                       ["Statins lower LDL cholesterol."])
    assert out["counts"]["unverified"] == 1 and out["counts"]["verified"] == 1
    assert [(f["action"], f["cited"], f["score"]) for f in out["failing"]] == [("unverified", 1, None)]


def test_a_guard_with_no_monitor_says_off_not_ok():
    out = guard_answer(Guard("lexical", reattributor=None, default_calibration=False), "Statins lower LDL [1].",
                       ["Statins lower LDL."])
    assert out["monitor"]["state"] == "off"


def test_the_agent_is_told_the_calibration_in_force_and_the_monitors_state():
    """The shipped lexical calibration deploys its PAC threshold; 9 of 10 unsupported citations passed voids the
    guarantee (P(Bin(10, 0.1) >= 9) ~ 9e-9): the agent is told both, and what the state means, as the card says."""
    g = Guard("lexical", reattributor=None)
    assert g.keeper.labels(9, 10) == "void"
    out = guard_answer(g, "Statins lower LDL [1].", ["Statins lower LDL."])
    _, rep = g.guard("Statins lower LDL [1].", ["Statins lower LDL."])
    assert (out["monitor"]["in_force"], out["monitor"]["state"]) == ("pac", "void")
    assert out["monitor"]["meaning"] == rep.guarantee_card["monitor"]["meaning"] != ""


def test_a_lone_surrogate_in_verify_citations_passage_is_refused_by_name():
    with pytest.raises(GuardInputError, match="'passage'"):
        verify_citation(Guard("lexical", reattributor=None), "Statins lower LDL.", "Statins \ud800 lower LDL.")
