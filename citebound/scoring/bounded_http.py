"""One JSON request over HTTP or HTTPS, bounded while it happens: a deadline for the whole exchange (a server
that trickles a byte a second is cut off at it, not at each read's timeout), a cap on the answer's size (read
no further than it), no redirect followed, and a ``stop`` callable asked between reads so work whose caller
left ends within a fraction of a second.

The standard library's own socket code only, so the lean install (no httpx) can call a served model.

>>> parse_status_line(b"HTTP/1.1 200 OK")
200
>>> dechunk(b"4\\r\\nabcd\\r\\n2\\r\\nef\\r\\n0\\r\\n\\r\\n")
(b'abcdef', True)
>>> dechunk(b"4\\r\\nab")
(b'', False)
"""
from __future__ import annotations

import json
import re
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

# statuses that say "try again later" without the request having done anything a retry would repeat
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_HEADER_BYTES = 64 * 1024
READ_SLICE_S = 0.2  # how often a read wakes to ask the deadline and ``stop``
CHUNK_FRAMING = 64 * 1024  # bytes a chunked answer may add to its body: chunk sizes and trailers


class HTTPFailure(Exception):
    """A request that got no usable answer. ``retryable``: nothing was done that a retry would repeat (no
    connection, or a 429/502/503/504), so the same request may be sent again."""

    def __init__(self, detail: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(detail)
        self.retryable, self.status = retryable, status


def parse_status_line(line: bytes) -> int:
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
        raise HTTPFailure(f"the answer is not HTTP (status line {line[:60]!r})")
    return int(parts[1])


def dechunk(data: bytes) -> tuple[bytes, bool]:
    """The body of a chunked transfer so far, and whether its last (empty) chunk has come."""
    out, pos = bytearray(), 0
    while True:
        eol = data.find(b"\r\n", pos)
        if (eol if eol >= 0 else len(data)) - pos > 32:
            raise HTTPFailure("the answer's chunked encoding is malformed (a size line over 32 bytes)")
        if eol < 0:
            return b"", False
        size_text = data[pos:eol].split(b";", 1)[0].strip()
        if not re.fullmatch(rb"[0-9a-fA-F]{1,16}", size_text):  # HTTP's 1*HEXDIG: not -1, +5, 0x10 or 1_0
            raise HTTPFailure(f"the answer's chunked encoding is malformed (size {size_text[:20]!r})")
        size = int(size_text, 16)
        if size == 0:
            return bytes(out), data.find(b"\r\n\r\n", eol) >= 0  # the last chunk, then trailers, then a blank line
        start, end = eol + 2, eol + 2 + size
        if len(data) < end + 2:
            return b"", False
        out += data[start:end]
        pos = end + 2


def _headers(block: bytes) -> tuple[int, dict[str, str]]:
    lines = block.split(b"\r\n")
    status = parse_status_line(lines[0])
    headers: dict[str, str] = {}
    for raw in lines[1:]:
        name, sep, value = raw.partition(b":")
        if sep:
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    return status, headers


def url_port(parts: Any) -> int:
    """The port a split URL names, else its scheme's: 80 for http, 443 otherwise (ValueError: a port that is not
    a number).

    >>> url_port(urlsplit("http://h")), url_port(urlsplit("https://h")), url_port(urlsplit("http://h:8080/x"))
    (80, 443, 8080)
    """
    return parts.port or (80 if parts.scheme == "http" else 443)


def exchange(url: str, method: str = "GET", body: Any = None, *, headers: Mapping[str, str] | None = None,
             timeout_s: float = 30.0, max_bytes: int = 4 << 20, stop: Callable[[], None] | None = None
             ) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request, within ``timeout_s`` in all and ``max_bytes`` of body.
    ``stop`` is called between reads and may raise to end the exchange (the socket is closed)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HTTPFailure(f"{url!r} is not an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise HTTPFailure("the URL carries credentials: give them by file (api_key_file), never in the URL")
    port = url_port(parts)  # the scheme is http or https here
    end = time.monotonic() + timeout_s
    payload = b"" if body is None else json.dumps(body, ensure_ascii=True, allow_nan=False).encode()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "User-Agent: citebound",
             "Accept: application/json", "Connection: close"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
    try:
        sock = socket.create_connection((parts.hostname, port), timeout=max(0.05, min(10.0, end - time.monotonic())))
    except OSError as e:  # nothing was sent: the same request may go again
        raise HTTPFailure(f"cannot connect to {parts.hostname}:{port} ({e})", retryable=True) from None
    try:
        if parts.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
        sock.settimeout(max(0.05, end - time.monotonic()))
        sock.sendall(request)
        return _read(sock, end, max_bytes, stop)
    except TimeoutError as e:
        if type(e) is not TimeoutError:  # raised by ``stop`` (a cancelled request), not by the socket
            raise
        raise HTTPFailure("no complete answer within the time left (no bytes came)") from None
    except (ssl.SSLError, OSError) as e:
        raise HTTPFailure(f"the connection failed ({type(e).__name__}: {e})") from None
    finally:
        sock.close()


def _read(sock: socket.socket, end: float, max_bytes: int, stop: Callable[[], None] | None
          ) -> tuple[int, dict[str, str], bytes]:
    buf = bytearray()
    status, headers, body_at, length, chunked = 0, {}, -1, None, False
    while True:
        if stop is not None:
            stop()
        left = end - time.monotonic()
        if left <= 0:
            raise HTTPFailure(f"no complete answer within the time left ({'some' if buf else 'no'} bytes came)")
        sock.settimeout(min(READ_SLICE_S, left))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        if chunk:
            buf += chunk
        if body_at < 0:
            cut = buf.find(b"\r\n\r\n")
            if cut < 0:
                if len(buf) > MAX_HEADER_BYTES or not chunk:
                    raise HTTPFailure("the answer's headers are over 64 KiB or never end" if chunk else
                                      "the server closed the connection before answering")
                continue
            status, headers = _headers(bytes(buf[:cut]))
            body_at = cut + 4
            chunked = "chunked" in headers.get("transfer-encoding", "").lower()
            if not chunked and "content-length" in headers:
                try:
                    length = int(headers["content-length"])
                except ValueError:
                    raise HTTPFailure(f"the answer's Content-Length {headers['content-length'][:20]!r} is not a number") \
                        from None
                if length > max_bytes:
                    raise HTTPFailure(f"the answer is {length} bytes, over the {max_bytes}-byte limit")
        got = len(buf) - body_at
        if got > max_bytes + (CHUNK_FRAMING if chunked else 0):  # chunked: the body, then its framing and trailers
            raise HTTPFailure(f"the answer is over the {max_bytes}-byte limit")
        if length is not None and got >= length:
            return status, headers, bytes(buf[body_at:body_at + length])
        if chunked and buf.endswith(b"\r\n\r\n"):
            data, done = dechunk(bytes(buf[body_at:]))
            if done and len(data) > max_bytes:
                raise HTTPFailure(f"the answer is {len(data)} bytes, over the {max_bytes}-byte limit")
            if done:
                return status, headers, data
        if not chunk:  # closed by the server
            if chunked or length is not None:
                raise HTTPFailure("the server closed the connection mid-answer")
            return status, headers, bytes(buf[body_at:])


def reject_constant(name: str) -> Any:
    """``parse_constant`` for a served model's answer: NaN and Infinity are not JSON."""
    raise ValueError(f"the answer holds {name}, which is not JSON")


def request_json(url: str, method: str = "GET", body: Any = None, **kw: Any) -> Any:
    """The JSON a 2xx answer holds; any other answer is an :class:`HTTPFailure` saying what came back
    (a redirect is never followed: it names where it points)."""
    status, headers, data = exchange(url, method, body, **kw)
    if 300 <= status < 400:
        where = headers.get("location", "?")[:200]
        raise HTTPFailure(f"answered {status}, a redirect to {where}: no redirect is followed; set the URL to the "
                          "server's own address", status=status)
    if status < 200 or status >= 300:
        snippet = data[:200].decode("utf-8", "replace").replace("\n", " ")
        raise HTTPFailure(f"answered {status}: {snippet}", retryable=status in RETRY_STATUSES, status=status)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise HTTPFailure(f"the answer is not JSON ({str(e)[:120]})") from None
