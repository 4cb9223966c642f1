"""The labelling app's body bound at its edges, through the app itself: a body of exactly the limit is read, one
byte more is refused, and a chunked body (no Content-Length, so no size to check first) is refused whatever its
size; a refused request leaves the label file as it was."""
import json

import pytest
from starlette.testclient import TestClient

from citebound.cli.label import make_label_session
from citebound.cli.main import parse
from citebound.labelling.app import MAX_BODY_BYTES, create_label_app
from tests.guard.test_labelling import answers_file

TOKEN = {"x-citebound-token": "tok-7", "content-type": "application/json"}


@pytest.fixture
def client(tmp_path):
    session = make_label_session(parse(["label", "--input", str(answers_file(tmp_path / "a.jsonl")), "--out",
                                        str(tmp_path / "labels.jsonl"), "--sample", "3", "--seed", "1",
                                        "--verifier", "lexical", "--labeller", "t"]))
    with TestClient(create_label_app(session, port=8766, token="tok-7"), base_url="http://127.0.0.1:8766") as c:
        yield c, tmp_path / "labels.jsonl"


def _body(item, size):
    """A label post padded with spaces to exactly ``size`` bytes (JSON allows whitespace)."""
    raw = json.dumps({"item_id": item, "judgement": "supported", "note": ""}).encode()
    return raw + b" " * (size - len(raw))


def _labels(path):
    return path.read_bytes() if path.exists() else b""


def test_the_body_bound_at_its_edges_and_a_chunked_body(client):
    c, labels = client
    item = c.get("/api/state").json()["item"]["item_id"]
    before = _labels(labels)
    r = c.post("/api/label", content=_body(item, MAX_BODY_BYTES + 1), headers=TOKEN)
    assert r.status_code == 413 and _labels(labels) == before
    r = c.post("/api/label", content=iter([_body(item, 200)]), headers=TOKEN)  # chunked: no Content-Length
    assert "content-length" not in {k.lower() for k in r.request.headers}
    assert r.status_code == 413 and _labels(labels) == before
    r = c.post("/api/label", content=_body(item, MAX_BODY_BYTES), headers=TOKEN)
    assert r.status_code == 200 and r.json()["position"] == 1
    assert json.loads(_labels(labels).splitlines()[-1])["judgement"] == "supported"


def test_a_label_the_session_refuses_is_a_409_and_writes_nothing(client):
    c, labels = client
    before = _labels(labels)
    r = c.post("/api/label", json={"item_id": "no-such-item", "judgement": "supported", "note": ""}, headers=TOKEN)
    assert r.status_code == 409 and "no-such-item" in r.json()["detail"]
    assert _labels(labels) == before and c.get("/api/state").json()["position"] == 0
    r = c.get("/api/score", params={"item_id": "no-such-item"})
    assert r.status_code == 409
