"""Readers at their boundaries, each expected value read off the bytes or the text by hand: an HTTP answer of
exactly its Content-Length (it must not wait for more), a chunk size line that never ends, the remote verifier's
answer checks (a class index one past the last, an item index one past the last, two class probabilities that do
not sum to 1) and its tries (max_retries 0 still makes one), a marker one past the last passage and a range with
three ends, a script whose ``<!--->`` ends its escape at once, and a stream held back from the first of an unclosed
hidden element and a tag still open at the end."""
from __future__ import annotations

import numpy as np
import pytest

import citebound
from citebound.scoring.bounded_http import HTTPFailure, dechunk

# --- the bounded HTTP reader ------------------------------------------------------------------------------------------


def test_an_answer_of_exactly_its_content_length_returns_without_waiting_for_the_close():
    """The server sends 8 bytes of an 8-byte answer and keeps the connection open for 5 s: the client has its
    answer at once (a reader waiting for a ninth byte would take the 5 s)."""
    from test_bounded_http import OK, answer, head

    took: list = []
    assert answer(head("Content-Length: 8") + OK, hold_s=5.0, took=took, timeout_s=10) == {"a": 1}
    assert took[0] < 2.5, took


def test_a_chunk_size_line_is_bounded_before_its_line_ends():
    """HTTP chunk sizes are short hex numbers: 32 bytes of size line with no CRLF yet may still be one (more may
    come), 33 cannot, and fails at once instead of reading on to the body cap."""
    assert dechunk(b"0" * 32) == (b"", False)
    with pytest.raises(HTTPFailure, match="a size line over 32 bytes"):
        dechunk(b"0" * 33)
    assert dechunk(b"5\r\nhello\r\n0\r\n\r\n") == (b"hello", True)


# --- the remote verifier -----------------------------------------------------------------------------------------------


def verifier(server, **over):
    from citebound import definitions
    from citebound.verifiers.remote import RemoteVerifier

    return RemoteVerifier(definitions.load("verifier", "remote_nli") | {"url": server.url, "model": server.model, **over})


def test_positive_class_must_be_a_class_the_model_has(server):
    from citebound.verifiers.remote import RemoteError

    assert verifier(server, num_classes=3, positive_class=2).positive == 2  # the last of three
    with pytest.raises(RemoteError, match=r"needs num_classes .* above positive_class \(3\)"):
        verifier(server, num_classes=3, positive_class=3)


def test_an_item_index_one_past_the_last_input_is_refused(server):
    from citebound.verifiers.remote import RemoteError

    v = verifier(server)
    row = {"probs": [0.6, 0.2, 0.2]}
    score, verdict = v._read({"model": server.model, "data": [row | {"index": 1}, row | {"index": 0}]}, 2)
    assert score.tolist() == [0.6, 0.6] and verdict.tolist() == [True, True]
    with pytest.raises(RemoteError, match=r"item 0 has index 2, not a new one in 0\.\.1"):
        v._read({"model": server.model, "data": [row | {"index": 2}, row | {"index": 0}]}, 2)


def test_two_class_probabilities_must_sum_to_one(server):
    from citebound.verifiers.remote import RemoteError

    v = verifier(server, num_classes=2, positive_class=0)
    assert v._read({"model": server.model, "data": [{"index": 0, "probs": [0.7, 0.3]}]}, 1)[0].tolist() == [0.7]
    with pytest.raises(RemoteError, match="item 0's class probabilities sum to 1.4000, not 1"):
        v._read({"model": server.model, "data": [{"index": 0, "probs": [0.7, 0.7]}]}, 1)


@pytest.mark.parametrize("retries,busy,posts,scored", [(0, 0, 1, True), (0, 1, 1, False), (1, 1, 2, True), (1, 2, 2, False)])
def test_max_retries_is_the_number_of_tries_after_the_first(server, retries, busy, posts, scored):
    """Each try is a POST; a 503 is retried while tries are left (backoff 0 here)."""
    server.behaviour, server.busy_first = "busy", busy
    s = citebound.load_scorer("remote_nli", overrides={"url": server.url, "model": server.model,
                                                       "max_retries": retries, "backoff_seconds": 0})
    ps = s.score(["aspirin"], ["aspirin"])
    assert len([r for r in server.requests if "body" in r]) == posts
    assert (not np.isnan(ps.score[0])) == scored, ps.reason


# --- markers -------------------------------------------------------------------------------------------------------------

def test_a_marker_one_past_the_last_passage_is_invalid_and_the_last_is_not():
    passages = ["Cells make ATP.", "Aspirin thins blood."]
    for base, last, past in ((1, 2, 3), (0, 1, 2)):
        _, rep = citebound.guard(f"Aspirin thins blood [{last}]. Aspirin thins blood [{past}].", passages,
                                 verifier="lexical", reattributor=None, base=base, threshold=0.5)
        assert [(a.cited, a.action) for a in rep.audit] == [(last, "verified"), (past, "invalid")], base


def test_a_range_with_three_ends_is_unreadable_not_its_first_number():
    text, rep = citebound.guard("Cells make ATP [1-3-5].", ["Cells make ATP.", "b", "c", "d", "e"],
                                verifier="lexical", reattributor=None)
    assert text == "Cells make ATP [1-3-5 UNVERIFIED]."
    assert [(a.marker, a.action, a.unreadable) for a in rep.audit] == [("[1-3-5]", "unverified", True)]


# --- scripts and streams ----------------------------------------------------------------------------------------------

def test_a_scripts_empty_comment_ends_its_escape_at_once():
    """In a script, ``<!--->`` is a whole comment (HTML's script data escape: '<!--', '-', '>' returns to script
    data), so the ``<script>`` after it does not double-escape, and the first ``</script>`` closes the script:
    the claim after it is text a reader sees, and its citation is checked."""
    from citebound.text.visible import UNCERTAIN, blank_hidden, passage_view, scan

    text = "<script><!---><script></script>Aspirin cures cancer [2]."
    assert blank_hidden(text) == " " * 31 + "Aspirin cures cancer [2]."
    assert scan(text).spans[UNCERTAIN] == []  # where the script ends is certain: a passage keeps what follows it
    assert passage_view(text).split() == ["Aspirin", "cures", "cancer", "[2]."]
    _, rep = citebound.guard(text, ["Cells make ATP.", "Aspirin thins blood."], verifier="lexical", reattributor=None,
                             threshold=0.5)
    assert [(a.cited, a.action) for a in rep.audit] == [(2, "flagged")]


def test_a_stream_is_held_from_the_first_of_an_unclosed_hidden_element_and_an_open_tag():
    """The hidden span opens at 6 and never closes; a tag still open starts at 64: nothing from 6 on is stable."""
    from citebound.guarding.stream import stable_end

    text = 'Seen. <span style="display:none">Aspirin cures cancer [2]. More <b'
    assert (text.index("<span"), text.index("<b")) == (6, 64)
    assert stable_end(text) == 6

