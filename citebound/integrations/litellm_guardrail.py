"""The guard as a LiteLLM proxy guardrail (the ``[litellm]`` extra; ``deploy/litellm/`` has a config to start from).

A lab that already runs LiteLLM's proxy adds the check inside it instead of a second proxy in front of it. On
chat completions, after the model answers (``mode: post_call``): the whole answer is guarded
(``async_post_call_success_hook``), or, streamed, held sentence by sentence, guarded and released as the guarding
proxy does (``async_post_call_streaming_iterator_hook``: the streamed text joins to the unstreamed guarded text).
The passages travel in the request, as for citebound's own proxy: ``extra_body={"citebound": {"passages": [...]}}``
(or in ``metadata.citebound``). A request without them is refused (400): an answer without its passages is never
passed. The report rides on the response as ``citebound`` (streamed: on the last chunk). ``citebound_action:
block`` refuses an answer past ``citebound_block_above`` with a 403 carrying the report (claims left out), or stops
a stream with ``finish_reason: content_filter``.

Settings are the guardrail's ``litellm_params`` keys prefixed ``citebound_`` (``citebound_verifier``,
``citebound_calibration``, ``citebound_action``, ``citebound_block_above``, ``citebound_on_error``,
``citebound_uncited``); LiteLLM's own keys of the same names (``action`` …) are not read. The guard is built once,
when LiteLLM loads the guardrail; its work runs in a worker thread, never on LiteLLM's event loop.
"""
from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import HTTPException
from litellm.integrations.custom_guardrail import CustomGuardrail

from citebound.guarding.guard import Guard
from citebound.guarding.report import normalise_passages
from citebound.guarding.stream import StreamAssembler
from citebound.text.limits import GuardInputError

SETTINGS = ("verifier", "calibration", "action", "block_above", "on_error", "uncited")


def guard_from(params: dict[str, Any]) -> Guard:
    """The Guard of a guardrail's ``citebound_*`` settings (the default verifier, embedding, when none is named)."""
    kw = {k: params[f"citebound_{k}"] for k in SETTINGS if params.get(f"citebound_{k}") is not None}
    verifier = kw.pop("verifier", "embedding")
    if "block_above" in kw:
        kw["block_above"] = float(kw["block_above"])
    return Guard(verifier, **kw)


def passages_of(data: dict[str, Any]) -> tuple[list[str], int | None, str | None]:
    """A request's passages, citation base and group, from its ``citebound`` field or ``metadata.citebound``;
    HTTPException 400 when there are none or they are malformed."""
    extra = data.get("citebound") or (data.get("metadata") or {}).get("citebound") or {}
    if not isinstance(extra, dict) or extra.get("passages") is None:
        raise HTTPException(400, "citebound: no passages: send them in the request's 'citebound' field, e.g. "
                                 "extra_body={'citebound': {'passages': [...]}}; an answer without its passages is "
                                 "never passed")
    try:
        return normalise_passages(list(extra["passages"])), extra.get("citation_base"), extra.get("group")
    except (GuardInputError, TypeError) as e:
        raise HTTPException(422, f"citebound: {e}") from None


def withheld(report: Any) -> dict[str, Any]:
    body = report.to_dict()
    for a in body["audit"]:
        a["claim"] = None
    return body


class CiteboundGuardrail(CustomGuardrail):
    """verify -> re-attribute -> flag the citations of a chat completion, inside LiteLLM's proxy."""

    def __init__(self, **kwargs: Any):
        self.guard = guard_from(kwargs)
        super().__init__(**{k: v for k, v in kwargs.items() if k in ("guardrail_name", "event_hook", "default_on")})

    async def async_post_call_success_hook(self, data: dict, user_api_key_dict: Any, response: Any) -> Any:
        choices = getattr(response, "choices", None)
        if not choices:  # not a chat completion (an embedding, an image): nothing to check
            return response
        passages, base, group = passages_of(data)
        if len(choices) != 1:
            raise HTTPException(502, f"citebound: the answer has {len(choices)} choices; the guard checks exactly one, "
                                     "and passes none unchecked")
        message = choices[0].message
        content = message.content or ""
        try:
            text, report = await asyncio.to_thread(self.guard.guard, content, passages, base=base, group=group)
        except GuardInputError as e:
            raise HTTPException(422, f"citebound: {e}") from None
        if report.blocked:
            raise HTTPException(403, {"error": f"citebound blocked the answer: {report.block_reason}",
                                      "citebound": {"report": withheld(report)}})
        if message.content is not None:
            message.content = text
        response.citebound = {"report": report.to_dict(), "verifier": self.guard.verifier_name}
        return response

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict: Any, response: Any,
                                                      request_data: dict) -> AsyncGenerator[Any, None]:
        passages, base, group = passages_of(request_data)
        asm = StreamAssembler(self.guard.limits, self.guard.on_error == "open")

        def step(seg: str, final: bool) -> str:
            ((text, rep),) = self.guard.guard_many([(seg, passages, base)], group=group, open_end=not final, block=False)
            return asm.add(seg, text, rep)

        last = None
        async for chunk in response:
            choices = getattr(chunk, "choices", None) or []
            if len(choices) > 1:
                raise HTTPException(502, "citebound: the stream has more than one choice; the guard checks exactly one")
            delta = choices[0].delta if choices else None
            content = getattr(delta, "content", None) if delta is not None else None
            if content:
                seg = asm.feed(content)
                delta.content = await asyncio.to_thread(step, seg, False) if seg else ""
                if (stop := asm.blocked(self.guard)) is not None:
                    delta.content = ""
                    yield self._end(chunk, stop, blocked=True)
                    return
                if not delta.content and not choices[0].finish_reason:
                    last = chunk
                    continue  # held: nothing of it may go out yet
            if choices and choices[0].finish_reason:
                out = await asyncio.to_thread(step, asm.finish(), True)
                if (stop := asm.blocked(self.guard)) is not None:
                    yield self._end(chunk, stop, blocked=True)
                    return
                tail, report = asm.end()
                delta.content = (delta.content or "") + out + tail
                yield self._end(chunk, report, blocked=False)
                return
            last = chunk
            yield chunk
        if last is not None:  # ended with no finish_reason: what is held is not sent unchecked
            raise HTTPException(502, "citebound: the upstream's stream ended without a finish_reason (cut short?); "
                                     f"{len(asm.hold.held)} characters of an unfinished sentence were not sent")

    def _end(self, chunk: Any, report: Any, blocked: bool) -> Any:
        chunk = copy.copy(chunk)
        if blocked:
            chunk.choices[0].delta.content = None
            chunk.choices[0].finish_reason = "content_filter"
        chunk.citebound = {"report": withheld(report) if blocked else report.to_dict(),
                           "verifier": self.guard.verifier_name}
        return chunk
