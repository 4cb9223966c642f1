"""Drives citebound's LiteLLM guardrail hooks directly, with LiteLLM's own response and stream-chunk types, in a
process of its own (importing LiteLLM rewires logging, so pytest runs this as a subprocess:
tests/guard/test_litellm_guardrail.py). Reads a JSON list of scenarios on stdin, writes one JSON result each.

A scenario: ``settings`` (the guardrail's litellm_params), ``data`` (the request body), and either ``choices``
(an unstreamed answer: one content per choice) or ``chunks`` (a stream: each ``{"contents": [...], "finish": ...}``,
one content per choice). A result: ``status`` (200, or the HTTPException's), ``detail``, and for an answer
``text`` (each choice's content, or the joined streamed text), ``report`` (the ``citebound`` report),
``finish`` (the last finish_reason seen), ``n_chunks`` (chunks the client got). ``inspect``: the result is the
Guard the settings built (verifier, action, block_above, on_error) and what LiteLLM was given (the guardrail's
name, event hook and default_on) instead; ``failing``: the verifier raises on
a call whose claims hold that text (tests/failing_scorer.py)."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any


def main() -> int:
    import litellm  # noqa: F401 - its import sets up what the types need
    from fastapi import HTTPException
    from litellm import ModelResponse, ModelResponseStream
    from litellm.types.utils import Choices, Delta, Message, StreamingChoices

    from citebound.integrations.litellm_guardrail import CiteboundGuardrail

    async def one(sc: dict[str, Any]) -> dict[str, Any]:
        try:
            g = CiteboundGuardrail(guardrail_name="citebound", event_hook="post_call", default_on=True, **sc["settings"])
        except Exception as e:  # noqa: BLE001 - a guardrail LiteLLM could not load: the scenario's result says why
            return {"status": "load-failed", "detail": f"{type(e).__name__}: {e}"}
        if sc.get("inspect"):  # the Guard the settings built
            return {"status": 200, "verifier": g.guard.verifier_name, "action": g.guard.action,
                    "block_above": g.guard.block_above, "on_error": g.guard.on_error,
                    "litellm": [g.guardrail_name, str(g.event_hook), g.default_on]}
        if sc.get("failing"):  # the verifier raises on a call whose claims hold this text
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from failing_scorer import Failing

            g.guard.scorer = Failing(sc["failing"])
        try:
            if "choices" in sc:
                resp = ModelResponse(choices=[Choices(message=Message(content=c, role="assistant"), finish_reason="stop",
                                                      index=i) for i, c in enumerate(sc["choices"])])
                out = await g.async_post_call_success_hook(sc["data"], None, resp)
                return {"status": 200, "text": [c.message.content for c in out.choices],
                        "report": getattr(out, "citebound", {}).get("report")}

            async def upstream():
                for ch in sc["chunks"]:
                    yield ModelResponseStream(choices=[
                        StreamingChoices(delta=Delta(content=c), finish_reason=ch.get("finish"), index=i)
                        for i, c in enumerate(ch["contents"])])

            sent, report, finish, n = [], None, None, 0
            try:
                async for chunk in g.async_post_call_streaming_iterator_hook(None, upstream(), sc["data"]):
                    n += 1
                    if chunk.choices:
                        sent.append(chunk.choices[0].delta.content or "")
                        finish = chunk.choices[0].finish_reason or finish
                    report = (getattr(chunk, "citebound", None) or {}).get("report") or report
            except HTTPException as e:
                return {"status": e.status_code, "detail": e.detail, "text": "".join(sent), "n_chunks": n}
            return {"status": 200, "text": "".join(sent), "report": report, "finish": finish, "n_chunks": n}
        except HTTPException as e:
            return {"status": e.status_code, "detail": e.detail}

    async def run_all(scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [await one(sc) for sc in scenarios]

    results = asyncio.run(run_all(json.load(sys.stdin)))
    sys.stdout.write("\n" + "RESULTS " + json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
