"""What the proxy's routes share about their upstream, in one module that both the plain and the streamed
route import (neither imports the other's internals): its errors, and what an answer carries that the guard
passes through unchecked and counts."""
from __future__ import annotations

from typing import Any


class UpstreamError(Exception):
    """The upstream failed; ``status`` is the answer to give (502, or 504 past the deadline)."""

    def __init__(self, detail: str, status: int = 502, body: str | None = None):
        super().__init__(detail)
        self.status, self.body = status, body


def not_json(name: str) -> Any:
    """``parse_constant`` for an upstream's answer: NaN, Infinity and -Infinity are not JSON, so an answer holding
    one is the upstream's fault (a 502), never a 500 when the response is written."""
    raise ValueError(f"the upstream's answer holds {name}, which is not JSON")


# message fields a reader or an agent may act on that the guard does not check: passed through, counted
UNCHECKED_FIELDS = ("function_call", "reasoning_content", "reasoning", "refusal", "audio")


def unchecked_fields(message: Any) -> list[str]:
    """The fields of ``message`` (or a stream delta) that carry content the guard passes through unchecked.

    >>> unchecked_fields({"content": "x", "refusal": "no", "reasoning_content": ""})
    ['refusal']
    """
    if not isinstance(message, dict):
        return []
    return [k for k in UNCHECKED_FIELDS if message.get(k) not in (None, "", [], {})]


def tool_calls(message: Any) -> int:
    """How many tool calls a message (or a stream delta) carries, a legacy ``function_call`` too: passed through
    unchanged, and unchecked.

    >>> tool_calls({"tool_calls": [{"id": "a"}, {"id": "b"}], "function_call": {"name": "f"}})
    3
    """
    if not isinstance(message, dict):
        return 0
    calls = message.get("tool_calls")
    return (len(calls) if isinstance(calls, list) else 0) + (1 if isinstance(message.get("function_call"), dict) else 0)
