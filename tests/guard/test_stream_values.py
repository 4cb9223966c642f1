"""What every chunk of a guarded chat stream carries (#56, round 46): the upstream's id, model and creation time on
each chunk, the role chunk included, as OpenAI's own stream does (a client groups chunks by id)."""
import json

import httpx
import pytest

pytest.importorskip("fastapi")
from service_helpers import running  # noqa: E402
from stream_cases import PASSAGES  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402


def _chunk(delta, finish=None):
    return {"id": "chatcmpl-up-7", "object": "chat.completion.chunk", "created": 1234, "model": "m-up",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_every_chunk_carries_the_upstreams_id_model_and_time():
    from tests.guard.test_hostile import Upstream

    events = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Statins lower LDL cholesterol [1]. "}),
              _chunk({"content": "Mitochondria produce ATP [2]."}), _chunk({}, "stop")]
    up = Upstream(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n")
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url)) as url:
            raw = httpx.post(f"{url}/v1/chat/completions", timeout=30,
                             json={"model": "m", "messages": [], "stream": True, "citebound": {"passages": PASSAGES}}).text
    finally:
        up.close()
    chunks = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    assert len(chunks) >= 3 and chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert {(c["id"], c["model"], c["created"]) for c in chunks} == {("chatcmpl-up-7", "m-up", 1234)}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == (
        "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2].")
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and raw.rstrip().endswith("data: [DONE]")
