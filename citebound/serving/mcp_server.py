"""``citebound mcp``: the guard as a Model Context Protocol server over stdio (the official ``mcp`` SDK,
the ``[mcp]`` extra), so an agent host can call it as a tool.

Tools:

- ``guard_answer(answer, passages, citation_base=1, group=None)``: the guarded answer and its report
  (verify -> re-attribute -> flag, the same :class:`~citebound.guarding.guard.Guard` and limits as the CLI
  and the service; ``blocked`` answers come back with their report and no text);
- ``verify_citation(claim, passage)``: one claim against one passage: the score, the verdict under the
  guard's rule and the evidence window (its character span in the passage and its text).

A bad argument is a tool error that names the field and says what is wrong; a verifier that fails gives
``unverified`` citations, never verified ones.
"""
from __future__ import annotations

from typing import Any

from citebound.guarding.guard import Guard, GuardInputError
from citebound.guarding.report import normalise_passages

MAX_CLAIM_CHARS = 10_000


def _field(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise GuardInputError(f"'{name}' must be {what}, got {type(value).__name__}")


def guard_answer(guard: Guard, answer: Any, passages: Any, citation_base: Any = 1, group: Any = None) -> dict[str, Any]:
    _field("answer", answer, str, "a string")
    _field("passages", passages, list, "a list of strings or of {'text': ...} objects")
    if citation_base not in (0, 1) or isinstance(citation_base, bool):
        raise GuardInputError(f"'citation_base' must be 0 or 1, got {citation_base!r}")
    if group is not None:
        _field("group", group, str, "a string (a calibration group) or null")
    try:
        texts = normalise_passages(passages)
    except GuardInputError as e:
        raise GuardInputError(f"'passages': {e}") from None
    text, report = guard.guard(answer, texts, base=citation_base, group=group)
    return {"guarded_answer": None if report.blocked else text, "report": report.to_dict()}


def verify_citation(guard: Guard, claim: Any, passage: Any) -> dict[str, Any]:
    from citebound.guarding.core import judge_pair

    _field("claim", claim, str, "a string")
    _field("passage", passage, str, "a string")
    if not claim.strip():
        raise GuardInputError("'claim' is empty")
    if not passage.strip():
        raise GuardInputError("'passage' is empty: a claim without its passage cannot be checked")
    if len(claim) > MAX_CLAIM_CHARS:
        raise GuardInputError(f"'claim' has {len(claim)} characters; the limit is {MAX_CLAIM_CHARS}")
    guard.limits.check_passages([passage])
    from citebound.text.limits import check_text

    check_text(claim, "'claim'")
    check_text(passage, "'passage'")
    passed, ev, error = judge_pair(guard.scorer, claim, passage, guard.threshold())
    if ev.score is None:
        return {"score": None, "verdict": "unverified", "rule": guard.rule,
                "reason": error or "the verifier gave no score", "evidence": None}
    return {"score": ev.score, "verdict": "supported" if passed else "not supported", "rule": guard.rule,
            "evidence": {"start": ev.start, "end": ev.end, "text": ev.text}}


def build_server(guard: Guard) -> Any:
    """The MCP server with the two tools bound to ``guard``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("citebound", instructions=(
        "Checks [N] citations of an answer against the passages they point at: guard_answer rewrites markers "
        "that fail ([N UNVERIFIED], [N INVALID]) or moves them to a passage that supports the sentence; "
        "verify_citation scores one claim against one passage."))

    @server.tool(name="guard_answer", description=(
        "Guard an answer's [N] citations against its passages: verify each, re-attribute failed ones to a passage "
        "that supports the sentence, flag the rest. Returns the guarded answer and the report (counts, each "
        "citation's score and evidence)."))
    def guard_answer_tool(answer: str, passages: list[Any], citation_base: int = 1,
                          group: str | None = None) -> dict[str, Any]:
        try:
            return guard_answer(guard, answer, passages, citation_base, group)
        except GuardInputError as e:
            raise ToolError(str(e)) from None

    @server.tool(name="verify_citation", description=(
        "Score one claim against one passage with the guard's verifier: the score, the verdict under the guard's "
        "rule, and the best evidence window of the passage."))
    def verify_citation_tool(claim: str, passage: str) -> dict[str, Any]:
        try:
            return verify_citation(guard, claim, passage)
        except GuardInputError as e:
            raise ToolError(str(e)) from None

    return server
