"""What the scripted upstreams share: a ThreadingHTTPServer on 127.0.0.1 (or a host and port given) in a daemon
thread, its ``/v1`` base URL, and a ``with`` block that starts it and shuts it down (tests and benchmarks only)."""
from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any


class LoopbackServer:
    def serve(self, handler: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = ThreadingHTTPServer((host, port), handler)
        # a short poll: shutdown() waits up to one poll interval (0.5 s by default) after every test
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
