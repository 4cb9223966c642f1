"""Round 27's edges, by hand: a contradiction head the study trained is named by its own digest (only the shipped one
is held to the pin); the labelling page answers its own IPv6 address and, on port 80, a Host without the port; the
embedding verifier's verdict at exactly its threshold, and its memo's bound across calls."""
import hashlib
import shutil

import pytest
from fastapi.testclient import TestClient

from citebound import models
from citebound.labelling.app import allowed_hosts
from tests.guard.test_hostile import _labelling_app


def test_a_study_trained_contradiction_head_is_named_by_its_own_digest(tmp_path, monkeypatch):
    shipped = models.CONTRADICTION_DIR / "head.onnx"
    mine = tmp_path / "results" / "head.onnx"
    mine.parent.mkdir()
    mine.write_bytes(shipped.read_bytes() + b"\0")  # another file: not the pin, and not refused for it
    path, digest = models.contradiction_head(str(mine))
    assert path == mine and digest == hashlib.sha256(mine.read_bytes()).hexdigest() != models.CONTRADICTION
    assert models.contradiction_head("shipped") == (shipped, models.CONTRADICTION)
    moved = tmp_path / "pkg"
    moved.mkdir()
    shutil.copy(mine, moved / "head.onnx")
    monkeypatch.setattr(models, "CONTRADICTION_DIR", moved)  # the same changed bytes where the shipped head lives
    with pytest.raises(models.GraphTampered, match="is not the pinned contradiction head"):
        models.contradiction_head("shipped")


@pytest.mark.parametrize("host,port,answered,refused", [
    ("fd00::5", 8766, ["[fd00::5]:8766", "127.0.0.1:8766", "[::1]:8766"], ["fd00::5:8766", "[fd00::5]", "127.0.0.1"]),
    ("127.0.0.1", 80, ["127.0.0.1", "localhost", "127.0.0.1:80", "[::1]"], ["127.0.0.1:8766", "evil.example"]),
    ("127.0.0.1", 8766, ["127.0.0.1:8766", "localhost:8766"], ["127.0.0.1", "localhost", "127.0.0.1:80"]),
])
def test_the_labelling_page_answers_its_own_names(tmp_path, host, port, answered, refused):
    """A browser sends an IPv6 host in brackets, and leaves out the port when it is 80 (RFC 9110: the default)."""
    assert set(answered) <= allowed_hosts(host, port) and not set(refused) & allowed_hosts(host, port)
    client = TestClient(_labelling_app(tmp_path, host, port))
    for h in answered:
        assert client.get("/api/state", headers={"host": h}).status_code == 200, h
    for h in refused:
        assert client.get("/api/state", headers={"host": h}).status_code == 421, h


@pytest.fixture(scope="module")
def embedding(graph):
    from citebound.verifiers.embedding import EmbeddingVerifier

    return lambda **kw: EmbeddingVerifier({"name": "embedding", "runtime": "onnx", "graph": "shipped", **kw})


def test_an_embedding_score_exactly_at_the_threshold_is_supported(embedding):
    claims, windows = ["Statins lower LDL cholesterol.", "Aspirin cures migraine."], ["Statins reduce LDL.", "LDL fell."]
    s, _ = embedding().judge(claims, windows)
    for k in range(2):
        at = embedding(threshold=float(s[k]))
        got, verdict = at.judge(claims, windows)
        assert got[k] == s[k] and bool(verdict[k]) is True
        assert bool(verdict[1 - k]) is bool(s[1 - k] >= s[k])


def test_the_embedding_memo_stays_bounded_across_calls(embedding):
    """memo_texts 3: a call that leaves more than 3 texts remembered keeps only its own (2 here), call after call."""
    v = embedding(memo_texts=3)
    for i in range(4):
        v.embed([f"text number {i} a", f"text number {i} b"])
        assert len(v._memo) <= 3
    assert sorted(v._memo) == ["text number 3 a", "text number 3 b"]
