"""Boundary tables for what the guard reads off the wire (#56): the SSE reader (an event with no blank line
after it, CRLF, no space after ``data:``, multi-line data, ``[DONE]``, reads split anywhere, the byte cap at and
one past the stream's size), the bounded HTTP client's chunked bodies (sizes in hex, extensions, trailers), and
the served verifier's answers whose rows come in any order. Every expected value is written out by hand."""
import asyncio

import numpy as np
import pytest

from citebound.scoring.bounded_http import HTTPFailure, dechunk
from citebound.serving.upstream import DONE, StreamFailure, sse_events


class Reads:
    """What sse_events reads: the body in the given pieces (as httpx's aiter_raw yields them)."""

    def __init__(self, *pieces: bytes):
        self.pieces = pieces

    async def aiter_raw(self):
        for p in self.pieces:
            yield p


def events(*pieces: bytes, cap: int = 1 << 20) -> list:
    async def go():
        return [e async for e in sse_events(Reads(*pieces), cap=cap)]
    return asyncio.run(go())


@pytest.mark.parametrize("raw,want", [
    (b'data: {"a": 1}\n\n', [{"a": 1}]),
    # the stream ends before the event's blank line: not dispatched (the SSE standard; the openai SDK drops it too)
    (b'data: {"a": 1}', []), (b'data: {"a": 1}\n', []), (b'data: {"a": 1}\n\ndata: {"b": 2}\n', [{"a": 1}]),
    (b'data:{"a": 1}\r\n\r\n', [{"a": 1}]),  # CRLF, no space after the colon
    (b'data: {"a":\ndata: 1}\n\n', [{"a": 1}]),  # one event's data over two lines, joined by a newline
    (b'event: x\nid: 3\n: comment\ndata: {"a": 2}\n\n', [{"a": 2}]),  # other fields are not data
    (b'data: {"a": 1}\n\ndata: [DONE]\n\n', [{"a": 1}, DONE]),
    (b'\n\n\ndata: {"a": 1}\n\n\n\ndata: {"b": 2}\n\n', [{"a": 1}, {"b": 2}]),  # blank lines with no data: no event
])
def test_sse_events_whole_and_split_at_every_byte(raw, want):
    assert events(raw) == want
    for cut in range(1, len(raw)):
        assert events(raw[:cut], raw[cut:]) == want, cut


def test_the_byte_cap_admits_exactly_its_size_and_not_one_byte_more():
    raw = b'data: {"a": 1}\n\n'  # 16 bytes
    assert len(raw) == 16
    assert events(raw, cap=16) == [{"a": 1}]
    with pytest.raises(StreamFailure, match="over 15 bytes"):
        events(raw, cap=15)  # in one read
    with pytest.raises(StreamFailure, match="over 15 bytes"):
        events(raw[:8], raw[8:], cap=15)  # or in two


@pytest.mark.parametrize("raw,want", [
    (b"4\r\nabcd\r\n0\r\n\r\n", (b"abcd", True)),
    (b"1a\r\n" + b"x" * 26 + b"\r\n0\r\n\r\n", (b"x" * 26, True)),  # 0x1a = 26
    (b"A\r\n" + b"y" * 10 + b"\r\n0\r\n\r\n", (b"y" * 10, True)),  # upper-case hex
    (b"10\r\n" + b"z" * 16 + b"\r\n0\r\n\r\n", (b"z" * 16, True)),  # "10" is 16, not ten
    (b"3;ext=1\r\nabc\r\n0\r\n\r\n", (b"abc", True)),  # a chunk extension
    (b"3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", (b"abc", True)),  # a trailer
    (b"3\r\nabc\r\n0\r\n", (b"abc", False)),  # the last chunk without its blank line: not finished
    (b"10\r\n" + b"z" * 15, (b"", False)),  # a chunk one byte short
])
def test_dechunk_reads_sizes_in_hex(raw, want):
    assert dechunk(raw) == want


@pytest.mark.parametrize("raw", [b"zz\r\nab\r\n", b"1" * 33 + b"\r\n", b"-1\r\nab\r\n0\r\n\r\n", b"+2\r\nab\r\n",
                                 b"0x2\r\nab\r\n", b"1_0\r\n" + b"a" * 16 + b"\r\n", b"\r\nab\r\n"])
def test_dechunk_refuses_malformed_sizes(raw):
    with pytest.raises(HTTPFailure, match="malformed"):
        dechunk(raw)


def test_served_rows_in_any_order_land_at_their_index():
    """The model server answers the rows in reverse order (each with its index): each unit's score is its own."""
    import citebound
    from tests.fake_classifier import FakeClassifier

    cases = [("aspirin inhibits cox", "Aspirin inhibits COX in platelets.", 1.0),  # 3 of 3 claim words
             ("statins migraine", "Statins lower LDL.", 0.5),  # 1 of 2
             ("statins cure every migraine", "Statins lower LDL.", 0.25),  # 1 of 4
             ("vitamin d", "Statins lower LDL.", 0.0)]
    with FakeClassifier() as server:
        server.behaviour = "reversed"
        s = citebound.load_scorer("remote_nli", overrides={"url": server.url, "model": server.model})
        got = s.score([c for c, _, _ in cases], [p for _, p, _ in cases])
    np.testing.assert_allclose(got.score, [e for *_, e in cases], atol=1e-12)
