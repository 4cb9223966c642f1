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

from typing import Any

from citebound.guarding.guard import Guard, GuardInputError
from citebound.guarding.report import normalise_passages, why

MAX_CLAIM_CHARS = 10_000


def _field(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind):  # kind is str or list: true and false are neither
        raise GuardInputError(f"'{name}' must be {what}, got {type(value).__name__}")


DETAILS = ("compact", "full")
COUNT_KEYS = ("n_citations", "verified", "reattributed", "flagged", "invalid", "unverified", "uncited",
              "removed_sentences", "review_budget", "blocked")
MAX_CLAIM_SHOWN = 200


def compact(report: dict[str, Any]) -> dict[str, Any]:
    """What an agent needs: the counts, and each citation that did not pass as written, with why."""
    failing = []
    for a in report["audit"]:
        if a["action"] == "verified":
            continue
        claim = a["claim"]
        failing.append({"marker": a["marker"], "cited": a["cited"], "action": a["action"], "score": a["score"],
                        "claim": claim if len(claim) <= MAX_CLAIM_SHOWN else claim[:MAX_CLAIM_SHOWN] + "…",
                        "new_pointer": a["new_pointer"], "why": why(a, report["rule"])})
    return {"counts": {k: report[k] for k in COUNT_KEYS}, "failing": failing, "rule": report["rule"],
            "score_scale": report["score_scale"], "guarantee": report["guarantee"]}


def guard_answer(guard: Guard, answer: Any, passages: Any, citation_base: Any = 1, group: Any = None,
                 detail: Any = "compact") -> dict[str, Any]:
    _field("answer", answer, str, "a string")
    _field("passages", passages, list, "a list of strings or of {'text': ...} objects")
    if citation_base not in (0, 1) or isinstance(citation_base, bool):
        raise GuardInputError(f"'citation_base' must be 0 or 1, got {citation_base!r}")
    if group is not None:
        _field("group", group, str, "a string (a calibration group) or null")
    if detail not in DETAILS:
        raise GuardInputError(f"'detail' must be 'compact' or 'full', got {detail!r}")
    try:
        texts = normalise_passages(passages)
    except GuardInputError as e:
        raise GuardInputError(f"'passages': {e}") from None
    text, report = guard.guard(answer, texts, base=citation_base, group=group)
    card = report.guarantee_card or {}
    mon = card.get("monitor") or {}
    full = report.to_dict()
    out = {"guarded_answer": None if report.blocked else text,
           "monitor": {"in_force": card.get("in_force"), "state": mon.get("state", "off"),
                       "meaning": mon.get("meaning", mon.get("reason", ""))}}
    if report.blocked:
        out["blocked"] = report.block_reason
    return out | (compact(full) if detail == "compact" else {"report": full})


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
    return {"score": ev.score, "verdict": "passes" if passed else "fails", "rule": guard.rule,
            "score_scale": guard.score_scale,
            "evidence": {"start": ev.start, "end": ev.end, "text": ev.text}}


GUARD_DESCRIPTION = (
    "Check the [N] citations of an answer against the passages they point at, before showing it. Each citation "
    "is scored against its passage and passes iff the score clears the calibrated threshold; a failed one is "
    "moved to another passage that passes ([3 (was 2)]) or rewritten [N UNVERIFIED] / [N INVALID]. Returns the "
    "guarded answer, the counts, and each citation that did not pass as written, with why; detail='full' adds "
    "the whole report. A sentence that cites nothing is counted as 'uncited': it was not checked. Read-only.")
VERIFY_DESCRIPTION = (
    "Score one claim against one passage with the guard's verifier: the score, whether it passes the guard's "
    "calibrated threshold ('passes' / 'fails' / 'unverified'), and the passage's best evidence window.")


def _caveat(guard: Guard) -> str:
    """What the verifier can and cannot see, from its definition (its score scale and its note)."""
    sees = f" It tells apart {guard.sees}." if guard.sees else ""
    return f" Verifier {guard.verifier_name}: {guard.score_scale}.{sees}" if guard.score_scale else ""


def build_server(guard: Guard) -> Any:
    """The MCP server with the two tools bound to ``guard``: every input described, read-only and idempotent
    annotations, one result (JSON text, compact by default)."""
    from typing import Annotated, Literal

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import Field

    from citebound import __version__

    server = MCPServer("citebound", version=__version__, instructions=(
        "Checks [N] citations of an answer against the passages they point at: guard_answer rewrites markers "
        "that fail ([N UNVERIFIED], [N INVALID]) or moves them to a passage that supports the sentence; "
        "verify_citation scores one claim against one passage." + _caveat(guard)))
    hints = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

    def result(payload: dict[str, Any]) -> Any:
        import json

        return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))])

    Passages = Annotated[list[str | dict[str, Any]], Field(
        description="the passages the answer's markers point at, in order: strings, or objects with 'text' (and "
                    "optionally 'title'). With citation_base 1, [1] is passages[0] and [i] is passages[i-1]",
        examples=[["Aspirin irreversibly inhibits cyclooxygenase-1.", {"title": "Statins", "text": "Statins lower LDL."}]])]

    @server.tool(name="guard_answer", title="Guard an answer's citations", description=GUARD_DESCRIPTION + _caveat(guard),
                 annotations=hints, structured_output=False)
    def guard_answer_tool(
            answer: Annotated[str, Field(description="the answer text with [N] citation markers",
                                         examples=["Aspirin inhibits COX-1 [1]. Statins lower LDL [2]."])],
            passages: Passages,
            citation_base: Annotated[int, Field(  # strict: true is not 1
                strict=True, ge=0, le=1, description="1 (default): [1] is the first passage; 0: [0] is the first passage")] = 1,
            group: Annotated[str | None, Field(
                description="the calibration group the answer belongs to, for a grouped calibration (null: pooled)",
                examples=["clinical"])] = None,
            detail: Annotated[Literal["compact", "full"], Field(
                description="compact (default): counts and the failing citations; full: the whole report, "
                            "every citation's score and evidence")] = "compact") -> Any:
        try:
            return result(guard_answer(guard, answer, passages, citation_base, group, detail))
        except GuardInputError as e:
            raise ToolError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - a bug: still one clear line for the agent, never a silent pass
            raise ToolError(f"citebound could not guard this answer: {type(e).__name__}: {str(e)[:300]}") from None

    @server.tool(name="verify_citation", title="Check one claim against one passage",
                 description=VERIFY_DESCRIPTION + _caveat(guard), annotations=hints, structured_output=False)
    def verify_citation_tool(
            claim: Annotated[str, Field(description="one claim (a sentence, without its marker)",
                                        examples=["Aspirin irreversibly inhibits cyclooxygenase-1"])],
            passage: Annotated[str, Field(description="the passage text the claim cites")]) -> Any:
        try:
            return result(verify_citation(guard, claim, passage))
        except GuardInputError as e:
            raise ToolError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - as above
            raise ToolError(f"citebound could not check this citation: {type(e).__name__}: {str(e)[:300]}") from None

    return server


def rpc_problem(line: str) -> tuple[Any, int, str] | None:
    """(id, JSON-RPC error code, message) for a line that must be answered with an error before the SDK
    sees it, or None: not JSON (-32700), not a request object (-32600), ``params`` that is not an object or
    text that is not well-formed unicode (a lone surrogate escape; -32602). The SDK would drop such a line
    without a reply, and the host would wait for ever.

    >>> rpc_problem('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1]}')
    (3, -32602, "'params' must be an object")
    >>> rpc_problem('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"a": "\\\\ud800"}}')[1:]
    (-32602, 'params.a is not well-formed unicode (a lone surrogate)')
    >>> rpc_problem('{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}')[:2]
    (5, -32600)
    """
    import json
    import math

    bad = object()  # a number Python cannot hold as JSON-RPC means it: non-finite, or an integer of > 4,000 digits

    def number(text: str) -> Any:
        v = float(text)
        return v if math.isfinite(v) else bad

    try:
        msg = json.loads(line, parse_constant=lambda _: bad, parse_float=number,
                         parse_int=lambda t: int(t) if len(t) <= 4000 else bad)
    except (ValueError, RecursionError) as e:
        return None, -32700, f"parse error: {str(e)[:200]}"
    if not isinstance(msg, dict):
        return None, -32600, "a JSON-RPC message must be an object"
    rid = msg.get("id") if isinstance(msg.get("id"), (str, int)) and not isinstance(msg.get("id"), bool) else None
    if msg.get("id") is bad:
        return None, -32600, "the id is a number out of range"
    if msg.get("jsonrpc") != "2.0":  # the SDK drops such a line without a word: a request gets an answer here
        return rid, -32600, f"'jsonrpc' must be \"2.0\", got {str(msg.get('jsonrpc'))[:20]!r}"
    if "params" in msg and not isinstance(msg["params"], dict):
        return rid, -32602, "'params' must be an object"
    stack: list[tuple[str, Any]] = [("params", msg.get("params")), ("method", msg.get("method"))]
    while stack:
        path, v = stack.pop()
        if v is bad:
            return rid, -32602, f"{path} is a non-finite number or one out of range"
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return rid, -32602, f"{path} is not well-formed unicode (a lone surrogate)"
        elif isinstance(v, dict):
            stack += [(f"{path}.{k}", x) for k, x in v.items()]
        elif isinstance(v, list):
            stack += [(f"{path}[{i}]", x) for i, x in enumerate(v)]
    return None


class _CheckedLines:
    """stdin's lines for the SDK, less those :func:`rpc_problem` refuses, which are answered here."""

    def __init__(self, stdin: Any, stdout: Any):
        self.stdin, self.stdout = stdin, stdout

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        import json

        async for line in self.stdin:
            if not line.strip():
                continue
            problem = rpc_problem(line)
            if problem is None:
                yield line
                continue
            rid, code, message = problem
            if rid is None and code == -32602:
                continue  # a notification: it gets no reply
            await self.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})
                                    + "\n")
            await self.stdout.flush()


class _LockedLines:
    """stdout for two writers (the SDK and :class:`_CheckedLines`): each line is written whole."""

    def __init__(self, out: Any):
        import anyio

        self.out, self.lock = out, anyio.Lock()

    async def write(self, text: str) -> None:
        async with self.lock:
            await self.out.write(text)

    async def flush(self) -> None:
        async with self.lock:
            await self.out.flush()


def serve_stdio(server: Any) -> None:
    """Run the MCP server on stdin/stdout, every request answered (a malformed one with its JSON-RPC error)."""
    import sys
    from io import TextIOWrapper

    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        out = _LockedLines(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=True)))
        lines = _CheckedLines(anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")), out)
        async with stdio_server(stdin=lines, stdout=out) as (read_stream, write_stream):
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())

    anyio.run(main)
