"""A scripted model server on loopback that speaks vLLM's pooling routes (tests only): ``GET /v1/models``,
``POST /classify``, ``/pooling`` and ``/score``, with behaviours a test switches on (slow, trickling, huge,
not JSON, NaN, wrong class counts, a redirect, 503s, a changed identity).

Its model is :func:`entail_probs`: P(entailment) is the share of the claim's words found in the passage, the
rest split evenly between neutral and contradiction; simple enough that a test works out each expected
score by hand. It records every request (path, headers, body) and the most requests it had in flight.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

try:
    from loopback_server import QuietServer
except ImportError:  # loaded by its file path (tests/lean_install/check_lean.py): its neighbour is loaded the same way
    import importlib.util
    from pathlib import Path

    _spec = importlib.util.spec_from_file_location("loopback_server", Path(__file__).with_name("loopback_server.py"))
    _loopback = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_loopback)
    QuietServer = _loopback.QuietServer

SEP = " [SEP] "


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def entail_probs(passage: str, claim: str) -> list[float]:
    """[P(entailment), P(neutral), P(contradiction)] of the scripted model."""
    c = words(claim)
    share = len(c & words(passage)) / len(c) if c else 0.0
    return [share, (1 - share) / 2, (1 - share) / 2]


class FakeClassifier:
    def __init__(self, model: str = "fake-nli", root: str = "/models/fake-nli"):
        self.model, self.root = model, root
        self.behaviour = "ok"  # ok, delay, slow, trickle, huge, notjson, nan, classes, redirect, busy, bad, count, reversed,
        # binary, logits, nodata, othermodel, notobject, badindex, boolindex, strindex, dupindex, above, below
        self.models = "ok"  # GET /v1/models: ok, down (503), odd (no list), hang (no answer for 4 s)
        self.busy_first = 0  # with "busy": answer 503 this many times, then as "ok"
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        self.fail_on: str | None = None  # a word: any request holding it answers 500
        self.probs = entail_probs  # (passage, claim) -> class probabilities: the served model
        self.sep = SEP  # what joins passage and claim in a /classify input (the verifier's input_template)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers)})
                if self.path != "/v1/models":
                    return self._send(404, {"detail": "Not Found"})
                if outer.models == "down":
                    return self._send(503, {"error": {"message": "loading"}})
                if outer.models == "hang":  # takes the request, says nothing for 4 s, then closes the connection
                    time.sleep(4)
                    self.close_connection = True  # read no next request from a socket the client has left
                    return
                if outer.models == "odd":
                    return self._send(200, {"object": "list", "data": "fake-nli"})
                self._send(200, {"object": "list", "data": [{"id": outer.model, "object": "model", "root": outer.root,
                                                             "max_model_len": 512}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                self._counted = True
                try:
                    self._answer(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    self._leave()

            def send_response(self, code, message=None):
                # a request stops counting as in flight when its answer starts: the client may send its next one as
                # soon as it reads this, possibly before this thread runs on (a count kept until after the write
                # saw a 4th and 5th request "in flight" from a client that never had more than 3 out)
                self._leave()
                super().send_response(code, message)

            def _leave(self):
                if getattr(self, "_counted", False):
                    self._counted = False
                    with outer.lock:
                        outer.in_flight -= 1

            def _answer(self, body: dict[str, Any]) -> None:
                b = outer.behaviour
                if b == "busy" and outer.busy_first > 0:
                    with outer.lock:
                        outer.busy_first -= 1
                    return self._send(503, {"error": {"message": "overloaded"}})
                if b == "bad":
                    return self._send(400, {"error": {"message": "bad request"}})
                if b == "redirect":
                    self.send_response(307)
                    self.send_header("Location", "http://elsewhere.invalid/classify")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if outer.fail_on and outer.fail_on in json.dumps(body):
                    return self._send(500, {"error": {"message": "scripted failure"}})
                if b == "slow":
                    time.sleep(30)
                if b == "delay":  # answers, after 0.3 s
                    time.sleep(0.3)
                if b == "notjson":
                    return self._raw(200, b"<html>gateway says hello</html>")
                if b == "huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()  # no length: read to close, 200 MB of it
                    for _ in range(200):
                        self.wfile.write(b" " * (1 << 20))
                    return
                rows = self._rows(body)
                if b == "nan":
                    rows[0]["probs" if "probs" in rows[0] else "score"] = float("nan")
                    text = json.dumps({"model": outer.model, "data": rows})  # json writes NaN
                    return self._raw(200, text.encode())
                if b == "classes":
                    for r in rows:
                        if "probs" in r:
                            r["probs"] = r["probs"][:2]
                if b in ("binary", "logits"):  # a two-class model: P(entailment) and the rest; or two raw scores
                    for r in rows:
                        key = "probs" if "probs" in r else "data"
                        e = r[key][0]
                        r[key] = [e, 1 - e] if b == "binary" else [e, 0.9]
                if b == "count":
                    rows = rows[:-1]
                if b == "reversed":  # the rows in reverse order, each with its own index (the API allows any order)
                    rows = rows[::-1]
                if b == "notobject":
                    rows[0] = rows[0]["probs" if "probs" in rows[0] else "data" if "data" in rows[0] else "score"]
                if b == "badindex":  # the first row's index one past the last
                    rows[0]["index"] = len(rows)
                if b in ("boolindex", "strindex"):  # the first row's index true (a JSON boolean) or "0" (a string)
                    rows[0]["index"] = True if b == "boolindex" else "0"
                if b == "dupindex":  # the last row repeats the first's index
                    rows[-1]["index"] = rows[0]["index"]
                if b in ("above", "below"):  # a score outside [0, 1] (a logit, not a probability)
                    key = "probs" if "probs" in rows[0] else "data" if "data" in rows[0] else "score"
                    v = 1.5 if b == "above" else -0.5
                    rows[0][key] = v if key == "score" else [v] + rows[0][key][1:]
                answer = {"id": "x", "object": "list", "model": "other-nli" if b == "othermodel" else outer.model}
                if b != "nodata":
                    answer["data"] = rows
                payload = json.dumps(answer).encode()
                if b == "trickle":  # a byte every 0.2 s: each read's timeout never fires
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    for i in range(len(payload)):
                        self.wfile.write(payload[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.2)
                    return
                self._raw(200, payload)

            def _rows(self, body: dict[str, Any]) -> list[dict[str, Any]]:
                if self.path == "/score":
                    return [{"index": i, "object": "score", "score": outer.probs(p, c)[0]}
                            for i, (p, c) in enumerate(zip(body["text_1"], body["text_2"]))]
                rows = []
                for i, text in enumerate(body["input"]):
                    passage, _, claim = text.partition(outer.sep)
                    probs = outer.probs(passage, claim)
                    label = ["entailment", "neutral", "contradiction"][max(range(len(probs)), key=probs.__getitem__)]
                    rows.append({"index": i, "label": label, "probs": probs, "num_classes": len(probs)}
                                if self.path == "/classify"
                                else {"index": i, "object": "pooling", "data": probs})
                return rows

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                self._raw(code, json.dumps(payload).encode())

            def _raw(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll: shutdown() waits up to one poll interval (0.5 s by default) after every test
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeClassifier:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
