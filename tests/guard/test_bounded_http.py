"""The served verifier's HTTP client against a server that sends exactly the bytes a test scripts (#56): every way
an answer can end (a length, chunks, the connection closed), each limit at its value and one past it, and what is
not HTTP at all. Each expected body or message is read off the bytes by hand."""
from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace

import pytest

from citebound.scoring.bounded_http import HTTPFailure, exchange, request_json

OK = b'{"a": 1}'  # 8 bytes


class Scripted:
    """One connection at a time: read the request, send ``raw`` (bytes, or a list of bytes and pauses in seconds),
    hold the connection ``hold_s``, close."""

    def __init__(self, raw: bytes, hold_s: float = 0.0):
        self.raw, self.hold_s, self.got = raw, hold_s, b""
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(5)
            while b"\r\n\r\n" not in self.got:
                self.got += conn.recv(65536)
            head, _, rest = self.got.partition(b"\r\n\r\n")
            n = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0)
            while len(rest) < n:
                rest += conn.recv(65536)
            self.got = head + b"\r\n\r\n" + rest
            for part in self.raw if isinstance(self.raw, list) else [self.raw]:
                if isinstance(part, float):
                    time.sleep(part)  # a pause between two parts
                else:
                    conn.sendall(part)
            time.sleep(self.hold_s)

    def close(self) -> None:
        self.thread.join(10)
        self.sock.close()


def answer(raw: bytes, hold_s: float = 0.0, took: list | None = None, **kw):
    """The JSON ``request_json`` makes of ``raw``; ``took`` gets the seconds the call itself took."""
    s = Scripted(raw, hold_s)
    t0 = time.monotonic()
    try:
        return request_json(s.url + "/classify", "POST", {"x": 1}, **kw)
    finally:
        if took is not None:
            took.append(time.monotonic() - t0)
        s.close()


def head(*lines: str) -> bytes:
    return ("\r\n".join(("HTTP/1.1 200 OK",) + lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("raw,want", [
    (head("Content-Length: 8") + OK, {"a": 1}),
    (head("Content-Length: 8") + OK + b"trailing bytes past the length", {"a": 1}),
    (head() + OK, {"a": 1}),  # no length, not chunked: the body runs to the close
    (head("Transfer-Encoding: chunked") + b'3\r\n{"a\r\n5\r\n": 1}\r\n0\r\n\r\n', {"a": 1}),
    (head("Transfer-Encoding: chunked") + b"8;ext=1\r\n" + OK + b"\r\n0\r\nX-Trailer: t\r\n\r\n", {"a": 1}),
    (head("Transfer-Encoding: Chunked", "Content-Length: 999") + b"8\r\n" + OK + b"\r\n0\r\n\r\n", {"a": 1}),
])
def test_every_way_an_answer_may_end(raw, want):
    assert answer(raw, timeout_s=5) == want


@pytest.mark.parametrize("raw,why", [
    (b"", "the server closed the connection before answering"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "the answer is not HTTP (status line b'SSH-2.0-OpenSSH_9.6')"),
    (b"HTTP/1.1 20 OK\r\n\r\n", "the answer is not HTTP"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, "the answer's headers are over 64 KiB or never end"),
    (head("Content-Length: 20") + OK, "the server closed the connection mid-answer"),
    (head("Transfer-Encoding: chunked") + b"8\r\n" + OK + b"\r\n", "the server closed the connection mid-answer"),
    (head("Content-Length: eight") + OK, "the answer's Content-Length 'eight' is not a number"),
    (head("Content-Length: 8") + b"not json", "the answer is not JSON"),
    (head("Content-Length: 3") + b"NaN", "the answer holds NaN, which is not JSON"),
    (b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere.invalid/x\r\nContent-Length: 0\r\n\r\n",
     "answered 302, a redirect to http://elsewhere.invalid/x: no redirect is followed"),
])
def test_what_is_not_a_usable_answer_says_why(raw, why):
    with pytest.raises(HTTPFailure) as e:
        answer(raw, timeout_s=5)
    assert why in str(e.value), str(e.value)
    assert e.value.retryable is False


@pytest.mark.parametrize("status,retryable", [(503, True), (502, True), (504, True), (429, True), (500, False),
                                              (404, False), (400, False)])
def test_a_status_outside_2xx_is_a_failure_retried_only_when_nothing_was_done(status, retryable):
    body = b'{"error": "x"}'
    raw = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    with pytest.raises(HTTPFailure) as e:
        answer(raw, timeout_s=5)
    assert (e.value.status, e.value.retryable) == (status, retryable)
    assert str(e.value) == f'answered {status}: {{"error": "x"}}'


@pytest.mark.parametrize("status,redirect", [(300, True), (399, True), (400, False), (199, False)])
def test_the_redirect_range_is_300_to_399(status, redirect):
    """3xx is a redirect, named with where it points: 300 and 399 are, 400 and 199 are failures that say their
    status and body (none retried)."""
    body = b'{"error": "x"}'
    raw = f"HTTP/1.1 {status} X\r\nLocation: http://elsewhere.invalid/y\r\nContent-Length: {len(body)}\r\n\r\n"
    with pytest.raises(HTTPFailure) as e:
        answer(raw.encode() + body, timeout_s=5)
    want = (f"answered {status}, a redirect to http://elsewhere.invalid/y: no redirect is followed" if redirect
            else f'answered {status}: {{"error": "x"}}')
    assert str(e.value).startswith(want), str(e.value)
    assert (e.value.status, e.value.retryable) == (status, False)


@pytest.mark.parametrize("size,ok", [(64 * 1024, True), (64 * 1024 + 1, False)])
def test_headers_of_64_kib_still_coming_are_read_and_one_byte_more_is_not(size, ok):
    """The headers' first ``size`` bytes come, then a pause before their end: 65,536 bytes (64 KiB) of headers
    are read; at 65,537, with no end yet, the answer is refused."""
    start = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX: "
    first = start + b"a" * (size - len(start))
    assert len(first) == size
    raw = [first, 0.3, b"\r\n\r\n" + OK]
    if ok:
        assert answer(raw, timeout_s=5) == {"a": 1}
        return
    with pytest.raises(HTTPFailure, match="the answer's headers are over 64 KiB or never end"):
        answer(raw, timeout_s=5)


@pytest.mark.parametrize("how,max_bytes,ok", [
    ("length", 8, True), ("length", 7, False), ("close", 8, True), ("close", 7, False),
    ("chunked", 8, True), ("chunked", 7, False),
])
def test_the_byte_limit_admits_its_size_and_not_one_byte_more(how, max_bytes, ok):
    """The 8-byte body by its length, by the close, and in two chunks (3 and 5 bytes: 18 bytes with their framing,
    so the limit is on the body the chunks carry)."""
    raw = {"length": head("Content-Length: 8") + OK, "close": head() + OK,
           "chunked": head("Transfer-Encoding: chunked") + b'3\r\n{"a\r\n5\r\n": 1}\r\n0\r\n\r\n'}[how]
    if ok:
        assert answer(raw, timeout_s=5, max_bytes=max_bytes) == {"a": 1}
        return
    with pytest.raises(HTTPFailure) as e:
        answer(raw, timeout_s=5, max_bytes=max_bytes)
    want = "the answer is over the 7-byte limit" if how == "close" else "the answer is 8 bytes, over the 7-byte limit"
    assert str(e.value) == want


@pytest.mark.parametrize("pad,ok", [(65517, True), (65518, False)])
def test_a_chunked_answers_framing_and_trailers_may_add_64_kib_to_the_limit_and_not_one_byte_more(pad, ok):
    """'8' CRLF, the 8-byte body, CRLF, '0' CRLF (16 bytes), a trailer 'X-Pad: ' + ``pad`` letters + CRLF, the
    blank line's CRLF: 16 + 7 + pad + 4 = 27 + pad bytes after the headers. With an 8-byte limit, 8 + 65,536 =
    65,544 of them are read (pad 65,517); one more is refused while it comes."""
    raw = head("Transfer-Encoding: chunked") + b"8\r\n" + OK + b"\r\n0\r\nX-Pad: " + b"a" * pad + b"\r\n\r\n"
    assert len(raw) - len(head("Transfer-Encoding: chunked")) == 27 + pad
    if ok:
        assert answer(raw, timeout_s=5, max_bytes=8) == {"a": 1}
        return
    with pytest.raises(HTTPFailure) as e:
        answer(raw, timeout_s=5, max_bytes=8)
    assert str(e.value) == "the answer is over the 8-byte limit"


@pytest.mark.parametrize("raw,came", [(b"", "no"), (head("Content-Length: 8") + b'{"a"', "some")])
def test_an_answer_that_stops_coming_fails_within_the_time_left(raw, came):
    took: list = []
    with pytest.raises(HTTPFailure) as e:
        answer(raw, hold_s=1.5, took=took, timeout_s=0.5)
    assert took[0] < 1.2
    assert f"no complete answer within the time left ({came} bytes came)" in str(e.value)


@pytest.mark.parametrize("url,why", [
    ("ftp://127.0.0.1:1/x", "is not an http:// or https:// URL"),
    ("http:///x", "is not an http:// or https:// URL"),
    ("http://user:pw@127.0.0.1:1/x", "the URL carries credentials"),
    ("http://user@127.0.0.1:1/x", "the URL carries credentials"),
])
def test_a_url_it_will_not_use_is_refused_before_any_connection(url, why):
    with pytest.raises(HTTPFailure) as e:
        exchange(url, timeout_s=1)
    assert why in str(e.value) and "pw" not in str(e.value).replace(url, "")


def test_a_refused_connection_may_be_retried():
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(HTTPFailure) as e:
        exchange(f"http://127.0.0.1:{port}/x", timeout_s=2)
    assert e.value.retryable is True and f"cannot connect to 127.0.0.1:{port}" in str(e.value)


def test_a_server_that_never_accepts_fails_the_connection_within_the_time_left():
    """A listener whose backlog (0) is already full: the kernel drops the next handshake, so connecting waits. The
    exchange's 0.5 s in all bound the connection too (not the 10 s a connection may take at most), and nothing
    was sent: it may be retried."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    port = s.getsockname()[1]
    queued = []
    for _ in range(8):  # fill the backlog; none is accepted
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        queued.append(c)
    time.sleep(0.2)
    t0 = time.monotonic()
    try:
        with pytest.raises(HTTPFailure) as e:
            exchange(f"http://127.0.0.1:{port}/x", timeout_s=0.5)
        took = time.monotonic() - t0
    finally:
        for c in queued:
            c.close()
        s.close()
    assert took < 3 and e.value.retryable is True
    assert str(e.value) == f"cannot connect to 127.0.0.1:{port} (timed out)"


def test_a_server_that_never_reads_the_request_fails_within_the_time_left():
    """The server accepts, reads nothing for 3 s, then closes: a 16 MiB body fills the socket's buffers and
    sending waits. The 0.5 s in all bound the sending too."""
    srv = socket.create_server(("127.0.0.1", 0))

    def accept_and_hold() -> None:
        conn, _ = srv.accept()
        time.sleep(3)
        conn.close()

    t = threading.Thread(target=accept_and_hold, daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(HTTPFailure) as e:
            exchange(f"http://127.0.0.1:{srv.getsockname()[1]}/x", "POST", {"x": "a" * (16 << 20)}, timeout_s=0.5)
        took = time.monotonic() - t0
    finally:
        t.join(10)
        srv.close()
    assert took < 3 and str(e.value) == "no complete answer within the time left (no bytes came)"


def test_the_request_on_the_wire():
    """The request line keeps the path and query; the host, a JSON body in ASCII and its exact length; the
    caller's headers after ours."""
    s = Scripted(head("Content-Length: 8") + OK)
    try:
        request_json(s.url + "/v1/classify?a=b", "POST", {"claim": "caf\u00e9"}, headers={"Authorization": "Bearer k"},
                     timeout_s=5)
    finally:
        s.close()
    head_part, _, body = s.got.partition(b"\r\n\r\n")
    lines = head_part.split(b"\r\n")
    port = s.url.rsplit(":", 1)[1]
    assert lines[0] == b"POST /v1/classify?a=b HTTP/1.1"
    assert f"Host: 127.0.0.1:{port}".encode() in lines and b"Authorization: Bearer k" in lines
    assert body == b'{"claim": "caf\\u00e9"}' and f"Content-Length: {len(body)}".encode() in lines


def test_stop_ends_the_exchange_between_reads():
    class Gone(Exception):
        pass

    calls = []

    def stop():
        calls.append(1)
        if len(calls) > 2:
            raise Gone

    took: list = []
    with pytest.raises(Gone):
        answer(b"", hold_s=1.5, took=took, timeout_s=10, stop=stop)
    assert took[0] < 1.2 and len(calls) == 3


@pytest.mark.parametrize("status_line,ok", [(b"HTTP/1.1 200", True), (b"HTTP/1.1 200 ", True), (b"HTTP/1.1 200 OK", True),
                                            (b"HTTP/1.1", False), (b"HTTP/1.1 2000", False)])
def test_a_status_line_needs_a_version_and_a_three_digit_code_and_no_reason(status_line, ok):
    """The reason phrase is optional (a server may end the line after the code); the version and a code of three
    digits are not."""
    raw = status_line + b"\r\nContent-Length: 8\r\n\r\n" + OK
    if ok:
        assert answer(raw, timeout_s=5) == {"a": 1}
        return
    with pytest.raises(HTTPFailure, match="the answer is not HTTP"):
        answer(raw, timeout_s=5)


@pytest.mark.parametrize("line,status", [
    (b"HTTP/1.1 200 OK", 200), (b"HTTP/1.0 503", 503), (b"HTTP/1.1 404 Not Found here", 404),
    (b"SSH-2.0 200 OpenSSH", None),  # a second word of three digits, but not HTTP
    (b"http/1.1 200 OK", None),  # the protocol name is upper case
    (b"HTTP/1.1", None), (b"HTTP/1.1 20 OK", None), (b"HTTP/1.1 2000 OK", None), (b"HTTP/1.1 2x0 OK", None),
    (b"", None),
])
def test_a_status_line_is_http_with_a_three_digit_code_or_the_answer_is_refused(line, status):
    from citebound.scoring.bounded_http import parse_status_line

    if status is None:
        with pytest.raises(HTTPFailure, match="the answer is not HTTP"):
            parse_status_line(line)
    else:
        assert parse_status_line(line) == status


@pytest.mark.parametrize("timeout_s,connect_timeout", [(30.0, 10.0), (4.0, 4.0), (0.01, 0.05)])
def test_connecting_waits_the_time_left_capped_at_10_s_and_floored_at_50_ms(monkeypatch, timeout_s, connect_timeout):
    """A server 100 ms away must be reachable with 4 s left: the connect's own timeout is the time left, at most
    10 s, at least 50 ms (recorded from what the client asks the socket layer for)."""
    import citebound.scoring.bounded_http as bh

    asked = []

    def refuse(address, timeout):
        asked.append((address, timeout))
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(bh, "socket", SimpleNamespace(create_connection=refuse))  # this module's name only
    with pytest.raises(HTTPFailure, match="cannot connect to 10.9.8.7:8123") as e:
        exchange("http://10.9.8.7:8123/v1/x", timeout_s=timeout_s)
    assert e.value.retryable
    assert [a for a, _ in asked] == [("10.9.8.7", 8123)] and asked[0][1] == pytest.approx(connect_timeout, abs=0.01)


def test_a_body_that_is_not_standard_json_is_refused_before_connecting(monkeypatch):
    import citebound.scoring.bounded_http as bh

    monkeypatch.setattr(bh, "socket", SimpleNamespace(create_connection=lambda *a, **k: pytest.fail("connected")))
    with pytest.raises(ValueError, match="not JSON compliant"):
        exchange("http://127.0.0.1:9/v1/x", "POST", {"score": float("nan")})


class Recorded:
    """A connected socket that records what the client asks of it and answers ``answer``'s reads in turn."""

    def __init__(self, *answer: bytes):
        self.timeouts, self.sent, self.answer = [], b"", [*answer, b""]

    def settimeout(self, t):
        self.timeouts.append(t)

    def sendall(self, data):
        self.sent += data

    def recv(self, n):
        return self.answer.pop(0)

    def close(self):
        pass


def test_sending_waits_the_time_left_then_each_read_wakes_every_200_ms(monkeypatch):
    """What the client asks of the socket, recorded: the request is sent under the time left (4 s here, not a
    fixed 50 ms a slow server's window would run out in), and each read waits at most 0.2 s."""
    import citebound.scoring.bounded_http as bh

    sock = Recorded(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    monkeypatch.setattr(bh, "socket", SimpleNamespace(create_connection=lambda address, timeout: sock))
    assert exchange("http://10.9.8.7:8123/v1/x", timeout_s=4.0)[0] == 200
    assert sock.sent.startswith(b"GET /v1/x HTTP/1.1\r\nHost: 10.9.8.7:8123\r\n")
    assert sock.timeouts[0] == pytest.approx(4.0, abs=0.05) and sock.timeouts[1:] == [0.2] * len(sock.timeouts[1:])
    assert len(sock.timeouts) >= 2


def test_an_answer_read_to_its_close_is_not_taken_for_a_chunked_end(monkeypatch):
    """No Content-Length and no chunking: the body is all the server sent before closing, even when it ends
    like a chunked body's last chunk ("0" and a blank line), which only a chunked answer's framing may end."""
    import citebound.scoring.bounded_http as bh

    sock = Recorded(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n0\r\n\r\n", b"{}")
    monkeypatch.setattr(bh, "socket", SimpleNamespace(create_connection=lambda address, timeout: sock))
    assert exchange("http://10.9.8.7:8123/v1/x", timeout_s=4.0) == (200, {"connection": "close"}, b"0\r\n\r\n{}")
