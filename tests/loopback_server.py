"""What the scripted upstreams share: a ThreadingHTTPServer on 127.0.0.1 (or a host and port given) in a daemon
thread, its ``/v1`` base URL, and a ``with`` block that starts it and shuts it down (tests and benchmarks only)."""
from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that prints nothing when a client leaves mid-answer (the tests' clients leave on
    purpose, and a handler still sleeping when its test ends would otherwise print the broken pipe into a later
    test's output); any other handler error is printed as usual."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    def serve(self, handler: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = QuietServer((host, port), handler)
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
