"""A real uvicorn server of ``citeguard serve`` on 127.0.0.1 in a thread, for tests and benchmarks."""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(cfg, scorer=None):
    """Serve ``create_app(cfg, scorer)`` with uvicorn until the block ends; yields the base URL."""
    import httpx
    import uvicorn

    from citeguard.service import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(cfg, scorer), host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/readyz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        t.join(timeout=10)
