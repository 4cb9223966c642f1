"""The served verifier's numbers and timings (#56, round 50), against the scripted model server: settings read as
exact numbers, a classifier's verdict as its top class, retries that double their pause, a retry never started past
the request's deadline, and the failure log's unit counts and quiet period, each worked out by hand."""
from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

import citebound
from citebound.scoring import deadline
from citebound.scoring.loader import VerifierLoadError
from tests.fake_classifier import FakeClassifier


def scorer(server, **over):
    return citebound.load_scorer("remote_nli", overrides={"url": server.url, "model": server.model, **over})


@pytest.mark.parametrize("over,why", [
    ({"batch_size": 2.5}, "batch_size must be an integer in [1, 1024], got 2.5"),
    ({"max_retries": True}, "max_retries must be an integer in [0, 10], got True"),
    ({"timeout_seconds": False}, "timeout_seconds must be a number in [0.1, 3600], got False"),
    ({"max_concurrency": 65}, "max_concurrency must be an integer in [1, 64], got 65"),
])
def test_settings_are_exact_numbers(server, over, why):
    with pytest.raises(VerifierLoadError, match=None) as e:
        scorer(server, **over)
    assert why in str(e.value)


@pytest.mark.parametrize("key,attr,lo,hi,step", [
    ("batch_size", "batch_size", 1, 1024, 1), ("max_concurrency", "max_concurrency", 1, 64, 1),
    ("timeout_seconds", "timeout", 0.1, 3600, 0.05), ("max_retries", "max_retries", 0, 10, 1),
    ("backoff_seconds", "backoff", 0, 60, 0.5), ("max_response_bytes", "max_bytes", 1024, 1 << 30, 1),
    ("identity_check_seconds", "identity_every", 0, 86400, 1), ("threshold", "threshold", 0, 1, 0.01),
])
def test_each_setting_is_taken_at_both_ends_of_its_range_and_refused_one_step_past(server, key, attr, lo, hi, step):
    """The ranges the refusals state ([1, 1024] units a request, [0, 10] retries …), written out here: both ends
    are settings a user may choose, and each is read as given; one step outside either end is refused."""
    for v in (lo, hi):
        assert getattr(scorer(server, **{key: v}).verifier, attr) == v
    for v in (lo - step, hi + step):
        with pytest.raises(VerifierLoadError) as e:
            scorer(server, **{key: v})
        assert f"{key} must be" in str(e.value) and f"in [{lo:g}, {hi:g}], got {v!r}" in str(e.value)


def test_a_classifiers_verdict_is_its_top_class_not_half():
    """2 of a claim's 5 words in the passage: the scripted model says [0.4, 0.3, 0.3], so entailment is the top class
    (a support verdict) though P(support) is under 0.5; 1 of 5: [0.2, 0.4, 0.4], not supported."""
    with FakeClassifier() as server:
        ps = scorer(server).score(["statins lower every single migraine", "statins cure every single migraine"],
                                  ["Statins lower LDL.", "Statins lower LDL."])
    np.testing.assert_allclose(ps.score, [0.4, 0.2], atol=1e-12)
    assert ps.verdict.tolist() == [True, False]


def test_retries_double_their_pause(server, caplog):
    """Two 503s, then the answer: the pauses are 0.25 s then 0.5 s, and the log numbers the retries 1/2 and 2/2."""
    server.behaviour, server.busy_first = "busy", 2

    class Timed(list):  # the server's request log, each entry stamped when it came
        def append(self, r):
            super().append(dict(r, at=time.monotonic()))

    s = scorer(server, max_retries=2, backoff_seconds=0.25)
    server.requests = Timed()
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]  # two 503s, then the answer
    posts = [r["at"] for r in server.requests if "body" in r]
    assert len(posts) == 3
    first, second = posts[1] - posts[0], posts[2] - posts[1]
    assert 0.2 <= first < 0.45 and 0.45 <= second < 0.9, (first, second)  # 0.25 s, then 0.5 s
    said = [r.getMessage() for r in caplog.records if "; retry " in r.getMessage()]
    assert [m.split("; retry ")[1] for m in said] == ["1/2 in 0.25 s", "2/2 in 0.50 s"], said


def test_no_retry_starts_past_the_requests_deadline(server):
    """A 503 with 1 s of backoff ahead and 0.8 s left: the unit fails closed at once with the server's answer, not a
    cancellation when the deadline passes mid-pause."""
    server.behaviour, server.busy_first = "busy", 10
    s = scorer(server, max_retries=2, backoff_seconds=1.0)
    t0 = time.monotonic()
    with deadline.WorkToken(0.8).active():
        ps = s.score(["aspirin"], ["aspirin"])
    assert time.monotonic() - t0 < 0.5
    assert np.isnan(ps.score[0]) and "answered 503" in ps.reason[0]
    assert len([r for r in server.requests if "body" in r]) == 1


def test_the_failure_log_counts_units_and_reports_what_its_quiet_period_hid(server, caplog, monkeypatch):
    import citebound.verifiers.remote as remote

    monkeypatch.setattr(remote, "LOG_EVERY_S", 0.3)
    s = scorer(server, batch_size=2, max_concurrency=2)  # a judge call takes 4 units, in requests of 2
    server.behaviour = "bad"
    with caplog.at_level(logging.ERROR, logger="citebound.verifiers.remote"):
        s.score(["a", "b", "c"], ["a", "b", "c"])  # requests of 2 and 1 units: one line, 3 of 3 units
        time.sleep(0.2)
        s.score(["d"], ["d"])  # inside the quiet period: hidden, counted
        time.sleep(0.2)
        s.score(["e", "f"], ["e", "f"])  # 0.4 s after the first line: logged, with what was hidden
    lines = [r.getMessage() for r in caplog.records if "unscored" in r.getMessage()]
    assert len(lines) == 2, lines
    assert "3 of 3 units unscored" in lines[0] and "more units" not in lines[0]
    assert "2 of 2 units unscored" in lines[1] and lines[1].endswith("(and 1 more units since the last line)")


def test_p_support_is_the_configured_positive_class_not_the_first(server):
    """A served model whose classes come as [contradiction, entailment, neutral] (positive_class 1; no label check):
    P(support) is class 1's probability, the share of the claim's words in the passage by hand (1, 1/2, 1/4, 0),
    and the verdict is class 1 on top (share above 1/3). Class 0's would be (1 - share) / 2: 0, 1/4, 3/8, 1/2."""
    from tests.fake_classifier import words

    def probs(passage, claim):
        c = words(claim)
        share = len(c & words(passage)) / len(c)
        return [(1 - share) / 2, share, (1 - share) / 2]

    server.probs = probs
    s = scorer(server, positive_class=1, positive_label=None)
    ps = s.score(["aspirin inhibits cox", "statins migraine", "statins cure every migraine", "vitamin d"],
                 ["Aspirin inhibits COX in platelets.", "Statins lower LDL.", "Statins lower LDL.", "Statins lower LDL."])
    np.testing.assert_allclose(ps.score, [1.0, 0.5, 0.25, 0.0], atol=1e-12)
    assert ps.verdict.tolist() == [True, True, False, False]


@pytest.mark.parametrize("timeout_s,bound", [(0.3, 5.0), pytest.param(60, 15.0, marks=pytest.mark.slow)])  # slow: 10 s
def test_asking_a_server_who_it_serves_waits_at_most_the_timeout_and_never_past_10_seconds(timeout_s, bound):
    """The identity a card pins is asked of the server with the verifier's timeout, capped at 10 s (the loader
    asks before anything else runs): a server that takes the connection and never answers fails in about
    ``min(timeout, 10)`` seconds, 0.3 s or 10 s, never the 60 s configured."""
    import socket

    from citebound.verifiers.remote import RemoteError, identity_of

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing reads or answers them
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(RemoteError, match="could not list its models"):
            identity_of({"url": url, "model": "m", "timeout_seconds": timeout_s})
        took = time.monotonic() - t0
    assert min(timeout_s, 10) <= took + 0.05 and took < bound, took


def _models_asked(server) -> int:
    return sum(r["path"] == "/v1/models" for r in server.requests)


def test_who_is_served_is_asked_at_load_then_only_when_due_or_after_a_failure(server):
    """identity_check_seconds one day: after loading, calls do not ask who is served. A call that fails makes the
    next one ask first; while that asking fails, every call asks again and scores nothing (NaN, never a pass),
    though the check is not due; once it answers, calls score and stop asking."""
    s = scorer(server, identity_check_seconds=86400, max_retries=0)
    loaded = _models_asked(server)
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    assert _models_asked(server) == loaded  # not due, nothing failed: not asked
    server.behaviour = "notjson"
    assert np.isnan(s.score(["aspirin"], ["aspirin"]).score).all()  # a failed call: suspect from here
    server.behaviour, server.models = "ok", "down"
    for k in (1, 2, 3):
        ps = s.score(["aspirin"], ["aspirin"])
        assert np.isnan(ps.score).all() and "could not list its models" in ps.reason[0]
        assert _models_asked(server) == loaded + k
    server.models = "ok"
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    assert _models_asked(server) == loaded + 4  # asked once more (and answered), then not again


def test_asking_who_is_served_waits_at_most_the_timeout_at_load_and_at_a_recheck(server):
    """At load (at most 10 s) and at each recheck (at most 5 s), the question has the verifier's timeout when it
    is shorter: 0.3 s here, against a socket that takes the connection and never answers, and a model list that
    hangs."""
    import socket

    from citebound.verifiers.remote import RemoteError, RemoteVerifier

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        t0 = time.monotonic()
        with pytest.raises(RemoteError, match="could not list its models"):
            RemoteVerifier({"url": f"http://127.0.0.1:{silent.getsockname()[1]}", "model": "m", "num_classes": 3,
                            "timeout_seconds": 0.3})
        assert time.monotonic() - t0 < 3.0
    s = scorer(server, timeout_seconds=0.3, identity_check_seconds=0)
    server.models = "hang"
    t0 = time.monotonic()
    ps = s.score(["aspirin"], ["aspirin"])
    assert time.monotonic() - t0 < 3.0
    assert np.isnan(ps.score).all() and "could not list its models" in ps.reason[0]


def test_a_request_that_gives_up_mid_pause_frees_its_call_slot_at_once(server):
    """One call slot (max_concurrency 1), a 503 and a 3 s pause before the retry: the request is cancelled 0.3 s
    in. Its pause ends within a tick, so the next request's call gets the slot at once, not after the 3 s."""
    server.behaviour, server.busy_first = "busy", 1
    s = scorer(server, max_concurrency=1, max_retries=1, backoff_seconds=3.0)
    tok = deadline.WorkToken(None)
    threading.Timer(0.3, tok.cancel).start()
    with pytest.raises(deadline.Cancelled), tok.active():
        s.score(["aspirin"], ["aspirin"])
    server.behaviour = "ok"
    t0 = time.monotonic()
    assert s.score(["statins"], ["statins"]).score.tolist() == [1.0]
    assert time.monotonic() - t0 < 1.5
