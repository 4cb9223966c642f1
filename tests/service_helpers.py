"""A real uvicorn server of ``citebound serve`` on 127.0.0.1 in a thread, for tests and benchmarks."""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, path: str = "/readyz", attempts: int = 600, pause: float = 0.05) -> bool:
    """Poll ``url + path`` until it answers 200 (True) or the attempts run out (False)."""
    import httpx

    for _ in range(attempts):
        try:
            if httpx.get(f"{url}{path}").status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(pause)
    return False


@contextmanager
def running(cfg, scorer=None):
    """Serve ``create_app(cfg, scorer)`` with uvicorn until the block ends; yields the base URL."""
    from citebound.serving import create_app

    with serving(create_app(cfg, scorer)) as url:
        yield url


@contextmanager
def serving(app):
    """Serve an app already made (a test that reaches into ``app.state``) until the block ends; yields the base
    URL once it is ready."""
    import uvicorn

    # the socket is bound here and handed to uvicorn: a port picked free and bound later could be taken in between
    # by another process's server (tests running beside each other), which this test would then talk to
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    try:
        yield url
    finally:
        server.should_exit = True
        t.join(timeout=10)
        sock.close()


def sse_data(r) -> list:
    """The JSON data of each server-sent event in a streamed response's body, ``[DONE]`` left out."""
    import json

    return [json.loads(x[6:]) for x in r.text.splitlines() if x.startswith("data: ") and x != "data: [DONE]"]
