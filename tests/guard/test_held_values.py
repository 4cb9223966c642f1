"""What every proxy face shares (citebound/serving/held.py), at its edges (#56 round 64): a Messages request's
passages are its ``citebound`` passages first, then its documents, numbered in that order; a failed stream's
message counts every held character, one included."""
from __future__ import annotations

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn  # noqa: E402
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

STATINS = "Statins lower LDL cholesterol in adults."
MITO = "Mitochondria produce ATP in cells."


def _messages(answer: str, body: dict, **cfg) -> tuple[httpx.Response, list]:
    with FakeAPIs(lambda b: Turn([answer])) as up, \
            running(ServeConfig(verifier="lexical", reattributor=None, upstream=up.base_url, **cfg)) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 64} | body, timeout=60)
    return r, up.requests


def test_citebound_passages_come_first_then_the_documents():
    # [1] is the citebound passage (statins), [2] the document (mitochondria): each claim's terms are all in its
    # own passage (verified) and none in the other (flagged, were the two numbered the other way round)
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": MITO}}
    body = {"messages": [{"role": "user", "content": [doc, {"type": "text", "text": "q"}]}],
            "citebound": {"passages": [STATINS]}}
    r, sent = _messages("Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2].", body)
    assert r.status_code == 200, r.text
    rep = r.json()["citebound"]["report"]
    assert (rep["verified"], rep["flagged"]) == (2, 0)
    assert [(a["cited"], a["evidence"]["text"]) for a in rep["audit"]] == [(1, STATINS), (2, MITO)]
    assert "citebound" not in sent[0]["body"]


@pytest.mark.parametrize("held,said", [(0, False), (1, True), (7, True)])
def test_a_failed_streams_message_counts_every_held_character(held, said):
    from citebound.serving.held import failure_message
    from citebound.serving.upstream import StreamFailure

    msg = failure_message(StreamFailure("the upstream's stream failed: boom"), "http://u", held)
    assert msg.startswith("upstream http://u: the upstream's stream failed: boom")
    assert (f"; {held} characters of an unfinished sentence were not sent" in msg) is said
    assert failure_message(StreamFailure("over the limit", "limit"), "http://u", held).startswith("over the limit")
