"""The served verifier (kind remote) against a scripted model server on loopback (tests/fake_classifier.py):
scores read from each route as the server gives them, worked out by hand; every hostile answer fails
closed (unverified, a reason, one log line) within its time and size bounds; requests in flight bounded;
a client that leaves stops its calls; the served model's identity pinned in the hash."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

import citebound
from citebound.calibration.files import CalibrationError
from citebound.scoring import deadline
from citebound.scoring.loader import VerifierLoadError, configured_hash
from tests import fake_classifier


def scorer(server, name="remote_nli", **over):
    return citebound.load_scorer(name, overrides={"url": server.url, "model": server.model, **over})


# (claim, passage, P(entailment) by hand = share of the claim's words in the passage, verdict = entailment on top)
CASES = [
    ("aspirin inhibits cox", "Aspirin inhibits COX in platelets.", 1.0, True),  # 3 of 3 words
    ("statins migraine", "Statins lower LDL.", 0.5, True),  # 1 of 2: [0.5, 0.25, 0.25]
    ("statins cure every migraine", "Statins lower LDL.", 0.25, False),  # 1 of 4: [0.25, 0.375, 0.375]
    ("vitamin d", "Statins lower LDL.", 0.0, False),  # 0 of 2
]


def test_classify_scores_are_the_served_probability_of_the_positive_class(server):
    s = scorer(server, batch_size=3)  # 4 units: requests of 3 and 1
    ps = s.score([c for c, *_ in CASES], [p for _, p, *_ in CASES])
    np.testing.assert_allclose(ps.score, [e for *_, e, _ in CASES], atol=1e-12)
    assert ps.verdict.tolist() == [v for *_, v in CASES]
    sent = [r for r in server.requests if r["path"] == "/classify"]
    sent.sort(key=lambda r: -len(r["body"]["input"]))  # the two requests run concurrently: either may arrive first
    assert [len(r["body"]["input"]) for r in sent] == [3, 1]
    assert sent[0]["body"]["input"][0] == "Aspirin inhibits COX in platelets. [SEP] aspirin inhibits cox"
    assert sent[1]["body"]["input"] == ["Statins lower LDL. [SEP] vitamin d"]
    assert all(r["body"]["model"] == "fake-nli" for r in sent)


def test_pooling_route_reads_the_same_classes(server):
    ps = scorer(server, api="pooling").score([c for c, *_ in CASES], [p for _, p, *_ in CASES])
    np.testing.assert_allclose(ps.score, [e for *_, e, _ in CASES], atol=1e-12)
    assert {r["path"] for r in server.requests if "body" in r} == {"/pooling"}


def test_score_route_sends_the_pair_in_the_configured_order(server):
    claims, passages = ["aspirin", "aspirin"], ["aspirin statins", "statins"]
    first = scorer(server, "remote_cross_encoder", model="fake-nli").score(claims, passages)
    # passage first: the fake reads text_1 as the passage: "aspirin" in "aspirin statins" -> 1; not in "statins" -> 0
    np.testing.assert_allclose(first.score, [1.0, 0.0])
    assert first.verdict.tolist() == [True, False]  # threshold 0.5, at or above
    swapped = scorer(server, "remote_cross_encoder", model="fake-nli", pair_order="claim_first").score(claims, passages)
    # claim first: the fake now reads "aspirin statins" as the claim: 1 of its 2 words in "aspirin" -> 0.5 (at 0.5: passes)
    np.testing.assert_allclose(swapped.score, [0.5, 0.0])
    assert swapped.verdict.tolist() == [True, False]
    body = server.requests[-1]["body"]
    assert body["text_1"] == claims and body["text_2"] == passages


def test_windows_index_zero_and_a_blank_passage(server):
    """Index 0 is the first passage; a passage of two windows is judged in each, the best kept; a blank one is
    never sent."""
    long_passage = "filler " * 100 + "aspirin inhibits cox"  # 720 characters: windows (0, 600), (120, 720)
    ps = scorer(server).score(["aspirin inhibits cox", "aspirin inhibits cox", "anything"],
                              ["Aspirin inhibits COX.", long_passage, "   "])
    assert ps.score.tolist() == [1.0, 1.0, 0.0]
    assert ps.best_window.tolist() == [0, 1, -1] and ps.n_windows.tolist() == [1, 2, 0]
    assert ps.reason == ["", "", "empty_passage"]
    sent = [t for r in server.requests if "body" in r for t in r["body"]["input"]]
    assert len(sent) == 3 and not any(t.startswith("   ") for t in sent)


def test_the_guard_verifies_reattributes_and_flags_through_the_served_model(server):
    passages = ["Aspirin inhibits cyclooxygenase in platelets.", "Statins lower LDL cholesterol."]
    answer = ("Statins lower LDL cholesterol [1]. Aspirin inhibits cyclooxygenase in platelets [1]. "
              "Vitamin D cures colds [2].")
    text, report = citebound.Guard(scorer(server), calibration=None).guard(answer, passages)
    assert text == ("Statins lower LDL cholesterol [2 (was 1)]. Aspirin inhibits cyclooxygenase in platelets [1]. "
                    "Vitamin D cures colds [2 UNVERIFIED].")
    assert (report.verified, report.reattributed, report.flagged, report.unverified) == (1, 1, 1, 0)


HOSTILE = [  # behaviour, the words the reason holds, the most seconds it may take (timeout_seconds = 1)
    ("slow", "no complete answer within", 2.5),
    ("trickle", "no complete answer within", 2.5),
    ("huge", "over the 1048576-byte limit", 2.5),
    ("notjson", "not JSON", 2.0),
    ("nan", "NaN", 2.0),
    ("classes", "2 class scores, not 3", 2.0),
    ("count", "items for", 2.0),
    ("redirect", "redirect to http://elsewhere.invalid/classify", 2.0),
    ("bad", "answered 400", 2.0),
    ("nodata", "the answer has no 'data' list", 2.0),
    ("othermodel", "the answer is from model 'other-nli', not 'fake-nli'", 2.0),
    ("notobject", "item 0 is not an object", 2.0),
    ("badindex", "item 0 has index 1, not a new one in 0..0", 2.0),  # one unit: index 1 is one past the last
    ("boolindex", "item 0 has index True, not a new one in 0..0", 2.0),  # true is no index, though Python's 1
    ("strindex", "item 0 has index 0, not a new one in 0..0", 2.0),  # "0", a string
    ("above", "item 0's scores are not probabilities in [0, 1]: [1.5,", 2.0),
    ("below", "item 0's scores are not probabilities in [0, 1]: [-0.5,", 2.0),
]


@pytest.mark.parametrize("behaviour,why,bound", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_answer_fails_closed_within_its_bounds(server, behaviour, why, bound, caplog):
    s = scorer(server, timeout_seconds=1, max_response_bytes=1 << 20, max_retries=2, backoff_seconds=0.05)
    server.behaviour = behaviour
    tracemalloc.start()
    t0 = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="citebound.verifiers.remote"):
        text, report = citebound.Guard(s, calibration=None, reattributor=None).guard(
            "Aspirin inhibits cyclooxygenase [1].", ["Aspirin inhibits cyclooxygenase in platelets."])
    took, (_, peak) = time.monotonic() - t0, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert took < bound, took
    assert peak < 16 << 20, peak  # the 200 MB answer is never held
    assert text == "Aspirin inhibits cyclooxygenase [1 UNVERIFIED]."
    assert report.unverified == 1 and report.verified == 0
    (audit,) = report.audit
    assert audit.action == "unverified" and why in audit.reason, audit.reason
    lines = [r for r in caplog.records if "unscored" in r.getMessage()]
    assert len(lines) == 1 and why in lines[0].getMessage()
    posted = [r for r in server.requests if "body" in r]
    assert len(posted) == 1  # none of these is retried: a retry would get the same answer


def test_a_server_that_stays_down_writes_one_line_not_one_per_call(server, caplog):
    s = scorer(server, batch_size=1, max_concurrency=1)  # one unit a call: 5 failing calls
    server.behaviour = "bad"
    with caplog.at_level(logging.ERROR, logger="citebound.verifiers.remote"):
        for i in range(5):
            assert np.isnan(s.score([f"w{i}"], [f"w{i}"]).score[0])
    assert len([r for r in caplog.records if "unscored" in r.getMessage()]) == 1


def test_overload_is_retried_with_backoff_then_fails_closed(server):
    s = scorer(server, max_retries=2, backoff_seconds=0.05)
    server.behaviour, server.busy_first = "busy", 1
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]  # one 503, then the answer
    assert len([r for r in server.requests if "body" in r]) == 2
    server.requests.clear()
    server.busy_first = 10
    ps = s.score(["aspirin"], ["aspirin"])
    assert np.isnan(ps.score[0]) and "answered 503" in ps.reason[0]
    assert len([r for r in server.requests if "body" in r]) == 3  # the first try and max_retries = 2


def test_one_failing_request_costs_only_its_own_citations(server):
    """Two answers in one guard call; the request holding the first answer's claim fails (500): its citation
    is unverified, the other answer's verified, each in its own report."""
    s = scorer(server, batch_size=1)
    server.fail_on = "migraine"
    passages = ["Aspirin inhibits cyclooxygenase.", "Aspirin cures migraine."]
    (t1, r1), (t2, r2) = citebound.Guard(s, calibration=None, reattributor=None).guard_many(
        [("Aspirin cures migraine [2].", passages), ("Aspirin inhibits cyclooxygenase [1].", passages)])
    assert t1 == "Aspirin cures migraine [2 UNVERIFIED]." and r1.unverified == 1
    assert "answered 500" in r1.audit[0].reason
    assert t2 == "Aspirin inhibits cyclooxygenase [1]." and r2.verified == 1 and r2.unverified == 0


def test_failed_units_are_not_cached(server, tmp_path):
    s = citebound.load_scorer("remote_nli", overrides={"url": server.url, "model": server.model},
                              cache_dir=str(tmp_path))
    server.behaviour = "bad"
    assert np.isnan(s.score(["aspirin"], ["aspirin"]).score[0])
    server.behaviour = "ok"
    ps = s.score(["aspirin"], ["aspirin"])
    assert ps.score.tolist() == [1.0] and ps.n_cached == 0  # asked again, not the failure replayed
    assert s.score(["aspirin"], ["aspirin"]).n_cached == 1


def test_max_in_flight_seen_by_the_server(server):
    server.behaviour = "delay"  # each answer takes 0.3 s: requests overlap as much as the client lets them
    s = scorer(server, batch_size=1, max_concurrency=3)
    t0 = time.monotonic()
    assert s.score([f"w{i}" for i in range(9)], [f"w{i}" for i in range(9)]).score.tolist() == [1.0] * 9
    assert server.max_in_flight == 3  # never more than three out at once, and three did overlap
    assert time.monotonic() - t0 > 0.85  # three rounds of 0.3 s, not one of nine


def test_a_client_that_leaves_stops_the_calls(server):
    server.behaviour = "slow"
    s = scorer(server, batch_size=1, max_concurrency=2, timeout_seconds=30)
    tok = deadline.WorkToken(None)
    threading.Timer(0.3, tok.cancel).start()
    t0 = time.monotonic()
    with pytest.raises(deadline.Cancelled), tok.active():
        s.score(["a", "b", "c", "d"], ["a", "b", "c", "d"])
    assert time.monotonic() - t0 < 1.0
    time.sleep(0.4)
    assert len([r for r in server.requests if "body" in r]) == 2  # the two queued ones never went


def test_a_request_deadline_cuts_the_call(server):
    server.behaviour = "slow"
    s = scorer(server, timeout_seconds=30)
    with deadline.WorkToken(0.5).active():
        t0 = time.monotonic()
        with pytest.raises(deadline.Cancelled):
            s.score(["a"], ["a"])
    assert time.monotonic() - t0 < 1.2


def test_calibrated_through_the_served_model_and_a_swap_is_refused(server, tmp_path, capsys):
    """citebound calibrate --labels scores through the served model and stamps its hash (the served identity in
    it); the guard takes that calibration while the same model is served, and refuses it, naming both ids,
    once another model is served under the same name."""
    from citebound.cli.main import main

    labels = tmp_path / "labels.jsonl"
    rows = [{"claim": f"w{i} x", "passage": f"w{i} x" if i % 2 else "other", "label": i % 2} for i in range(40)]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cal = tmp_path / "cal.json"
    over = ["--override", f"url={server.url}", "--override", "model=fake-nli"]
    assert main(["calibrate", "--labels", str(labels), "--verifier", "remote_nli", *over, "--alpha", "0.2",
                 "--out", str(cal)]) == 0
    s = scorer(server)
    made = json.loads(cal.read_text())
    assert made["verifier_hash"] == s.hash == configured_hash(s.cfg)
    posted = [t for r in server.requests if r["path"] == "/classify" for t in r["body"]["input"]]
    assert len(posted) == 40  # every labelled pair went to the served model
    text, _ = citebound.Guard(s, calibration=str(cal)).guard("w1 x [1].", ["w1 x"])
    assert text == "w1 x [1]."  # supported (score 1 > tau)
    server.root = "/models/another-nli"  # the same name, another model behind it
    swapped = scorer(server)
    assert swapped.hash != s.hash
    with pytest.raises(CalibrationError) as e:
        citebound.Guard(swapped, calibration=str(cal))
    assert s.hash in str(e.value) and swapped.hash in str(e.value)


def test_a_swap_while_running_fails_every_call(server, caplog):
    s = scorer(server, identity_check_seconds=0)
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    server.root = "/models/another-nli"
    with caplog.at_level(logging.ERROR, logger="citebound.verifiers.remote"):
        ps = s.score(["aspirin"], ["aspirin"])
    assert np.isnan(ps.score[0]) and "changed" in ps.reason[0] and "/models/another-nli" in ps.reason[0]
    server.root = "/models/fake-nli"
    assert np.isnan(s.score(["aspirin"], ["aspirin"]).score[0])  # sticky: a restart decides, not a flip back
    assert sum("changed" in r.getMessage() for r in caplog.records) == 1


def test_a_failure_makes_the_next_call_ask_who_is_served(server):
    s = scorer(server, identity_check_seconds=3600)
    server.behaviour = "bad"
    s.score(["aspirin"], ["aspirin"])
    server.behaviour = "ok"
    server.requests.clear()
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    assert [r["path"] for r in server.requests] == ["/v1/models", "/classify"]
    server.requests.clear()
    s.score(["statins"], ["statins"])
    assert [r["path"] for r in server.requests] == ["/classify"]  # not again within the hour


def test_the_key_comes_from_a_file_and_reaches_the_server(server, tmp_path):
    key = tmp_path / "key"
    key.write_text("s3cr3t-token\n")
    key.chmod(0o600)
    s = scorer(server, api_key_file=str(key))
    s.score(["aspirin"], ["aspirin"])
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer s3cr3t-token"
    assert "s3cr3t" not in s.hash and "s3cr3t" not in json.dumps(s.cfg)


@pytest.mark.parametrize("over,why", [
    ({"url": "http://user:pw@127.0.0.1:1"}, "carries credentials"),
    ({"url": "ftp://127.0.0.1:1"}, "not an http:// or https:// URL"),
    ({"model": "other"}, "serves ['fake-nli'], not 'other'"),
    ({"api": "rerank"}, "api 'rerank' is not one of"),
    ({"batch_size": 0}, "batch_size must be an integer in [1, 1024]"),
    ({"num_classes": 3, "positive_class": 3}, "above positive_class (3)"),
    ({"input_template": "{passage} {hypothesis}"}, "input_template may hold only"),
    ({"pair_order": "query_first"}, "pair_order 'query_first' is not passage_first or claim_first"),
    ({"model": ""}, "model (the served model's name) is required"),
    ({"url": "http://127.0.0.1:9"}, "the model server http://127.0.0.1:9 could not list its models ("),
    ({"api_key_file": "/nonexistent/key"}, "api_key_file /nonexistent/key: cannot read a secret from it"),
])
def test_a_bad_definition_is_one_line(server, over, why):
    with pytest.raises(VerifierLoadError) as e:
        scorer(server, **over)
    assert why in str(e.value) and "\n" not in str(e.value) and "pw" not in str(e.value)


def test_a_label_the_server_names_otherwise_is_refused(server):
    # class 1 is "neutral" on this server; a label is checked when its class is the top one, as here (0 of 2 words)
    ps = scorer(server, positive_class=1, positive_label="entailment").score(["vitamin d"], ["Statins."])
    assert np.isnan(ps.score[0]) and "calls class 1 'neutral', not 'entailment'" in ps.reason[0]


def test_the_served_verifier_needs_no_torch(server):
    code = ("import sys, citebound; s = citebound.load_scorer('remote_nli', overrides={'url': sys.argv[1], "
            "'model': 'fake-nli'}); print(s.score(['aspirin'], ['aspirin']).score[0]); "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    out = subprocess.run([sys.executable, "-c", code, server.url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1.0"


def test_the_service_batcher_fills_a_served_batch(server):
    """Eight concurrent guard requests to `citebound serve` with a 50 ms batching window: the model server gets
    /classify requests holding several requests' claims, and each answer gets its own verdict (hand-worked:
    the even ones' claims are all in their passage, the odd ones' half)."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx
    from service_helpers import running

    from citebound.serving import ServeConfig

    bodies = [{"answer": f"Topic{i} alpha [1].", "passages": [f"Topic{i} alpha." if i % 2 == 0 else f"Topic{i} beta."]}
              for i in range(8)]
    with running(ServeConfig(verifier="remote_nli", max_wait_ms=50), scorer=scorer(server)) as url:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda b: httpx.post(f"{url}/v1/guard", json=b, timeout=30).json(), bodies))
    for i, g in enumerate(got):
        # even: 2 of 2 claim words -> [1, 0, 0], entailment on top; odd: 1 of 2 -> [0.5, 0.25, 0.25], on top too
        assert g["report"]["verified"] == 1, (i, g)
    sizes = [len(r["body"]["input"]) for r in server.requests if r["path"] == "/classify"]
    assert sum(sizes) >= 8 and max(sizes) >= 2, sizes  # merged: fewer requests than answers
    merged = max((r for r in server.requests if r["path"] == "/classify"), key=lambda r: len(r["body"]["input"]))
    assert len({t.split(" [SEP] ")[1] for t in merged["body"]["input"]}) >= 2  # claims of several requests


@pytest.mark.parametrize("extra", [[], ["--beta", "0.5", "--ltt-method", "holm"],
                                   ["--beta", "0.5", "--ltt-method", "fixed_sequence"],
                                   ["--precision", "0.6", "--supported-share-min", "0.3"]])
def test_calibrate_through_the_served_model_equals_calibrate_on_its_scores(server, tmp_path, extra, capsys):
    """calibrate --labels scoring through the served verifier deploys what calibrate --scores deploys on the
    scores worked out by hand from the scripted model (the share of the claim's words in the passage), with
    each rule: split-conformal, LTT (Holm, fixed sequence) and precision."""
    from citebound.cli.main import main

    rows, frozen = [], []
    for i in range(60):
        k = i % 5  # claim of 4 words, k of them in the passage: score k / 4
        claim = " ".join(f"c{i}w{j}" for j in range(4))
        passage = " ".join(f"c{i}w{j}" for j in range(k)) or "nothing"
        label = int(k >= 3 or i % 7 == 0)
        rows.append({"claim": claim, "passage": passage, "label": label})
        frozen.append({"score": k / 4, "label": label})
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in frozen))
    s = scorer(server)
    over = ["--override", f"url={server.url}", "--override", "model=fake-nli"]
    assert main(["calibrate", "--labels", str(tmp_path / "labels.jsonl"), "--verifier", "remote_nli", *over,
                 "--alpha", "0.3", *extra, "--out", str(tmp_path / "a.json")]) == 0
    assert main(["calibrate", "--scores", str(tmp_path / "scores.jsonl"), "--verifier", "remote_nli", *over,
                 "--alpha", "0.3", *extra, "--out", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["verifier_hash"] == b["verifier_hash"] == s.hash
    assert a["tau"] == b["tau"] and a.get("method") == b.get("method")


def test_labels_carrying_the_served_hash_reuse_their_scores_until_another_model_is_served(server, tmp_path, capsys):
    """Labels made with this served model (their verifier_hash) are calibrated on the scores they carry, and the
    server is asked nothing; once another model is served under the name, the hash no longer matches, so every
    pair is scored again through the server."""
    from citebound.cli.main import main

    s = scorer(server)
    rows = [{"claim": f"w{i} x", "passage": f"w{i} x" if i % 2 else "other", "label": i % 2,
             "score": 1.0 if i % 2 else 0.0, "verifier_hash": s.hash} for i in range(30)]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    over = ["--override", f"url={server.url}", "--override", "model=fake-nli"]
    server.requests.clear()
    assert main(["calibrate", "--labels", str(labels), "--verifier", "remote_nli", *over, "--alpha", "0.2",
                 "--out", str(tmp_path / "a.json")]) == 0
    assert "reusing the scores the 30 labels carry" in capsys.readouterr().err
    assert not [r for r in server.requests if r["path"] == "/classify"]
    server.root = "/models/another-nli"
    assert main(["calibrate", "--labels", str(labels), "--verifier", "remote_nli", *over, "--alpha", "0.2",
                 "--out", str(tmp_path / "b.json")]) == 0
    assert "scoring 30 labelled citations" in capsys.readouterr().err
    assert sum(len(r["body"]["input"]) for r in server.requests if r["path"] == "/classify") == 30
    assert json.loads((tmp_path / "b.json").read_text())["verifier_hash"] == scorer(server).hash != s.hash


@pytest.mark.parametrize("api", ["classify", "pooling"])
def test_two_class_scores_must_be_probabilities_that_sum_to_1(server, api):
    """A two-class model (num_classes 2): [P(entailment), 1 - P] is read, P by hand from CASES; two scores that do
    not sum to 1 (logits, or a model that is not softmaxed: [P, 0.9]) leave every unit unscored, never read as a
    probability."""
    server.behaviour = "binary"
    s = scorer(server, api=api, num_classes=2, positive_class=0)
    claims, passages = [c[0] for c in CASES], [c[1] for c in CASES]
    got = s.score(claims, passages)
    np.testing.assert_allclose(got.score, [c[2] for c in CASES], atol=1e-12)
    # the top class of two: 1.0 and 0.5 (a tie, [0.5, 0.5]: the first class, as argmax breaks ties) are support
    assert got.verdict.tolist() == [True, True, False, False]
    server.behaviour = "logits"
    s = scorer(server, api=api, num_classes=2, positive_class=0, max_retries=0)
    bad = s.score(claims[:1], passages[:1])
    assert np.isnan(bad.score).all() and not bad.verdict.any()
    assert "sum to 1.9000, not 1" in bad.reason[0]


@pytest.mark.parametrize("url", ["http://user:pw@127.0.0.1:1/models/nli", "http://user:pw@127.0.0.1:1/"])
def test_credentials_in_a_url_with_a_path_are_refused_too(server, url):
    with pytest.raises(VerifierLoadError) as e:
        scorer(server, url=url)
    # refused by the definition's own check, before any call (the HTTP client would refuse such a URL too)
    assert "carries credentials: give the key by file (api_key_file)" in str(e.value) and "pw" not in str(e.value)
    assert "could not list its models" not in str(e.value)


def test_two_units_with_one_index_twice_fail_together(server):
    """Two units answered as index 0 twice: the batch cannot say which score is whose, so both are unscored."""
    server.behaviour = "dupindex"
    ps = scorer(server, max_retries=0).score(["aspirin", "statins"], ["aspirin", "statins"])
    assert np.isnan(ps.score).all() and all("item 1 has index 0, not a new one in 0..1" in r for r in ps.reason)


@pytest.mark.parametrize("models,why", [("down", "could not list its models (answered 503"),
                                        ("odd", "/v1/models is not an OpenAI-style model list")])
def test_a_model_list_the_guard_cannot_read_stops_the_load(server, models, why):
    server.models = models
    with pytest.raises(VerifierLoadError) as e:
        scorer(server)
    assert why in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("key,why", [("k\x07ey\n", "not a printable ASCII key"), ("cl\u00e9\n", "not a printable ASCII key"),
                                     ("\n \n", "it is empty: write the secret on its first line")])
def test_a_key_file_with_no_usable_key_stops_the_load_without_showing_it(server, tmp_path, key, why):
    f = tmp_path / "key"
    f.write_text(key)
    with pytest.raises(VerifierLoadError) as e:
        scorer(server, api_key_file=str(f))
    assert why in str(e.value) and "ey" not in str(e.value).split("key")[-1]
    assert [r["path"] for r in server.requests] == []  # nothing was sent without the key


def test_a_model_list_that_fails_at_a_recheck_leaves_every_unit_unscored_until_it_answers(server):
    """identity_check_seconds 0: every call asks who is served first. While the list fails, no unit is scored
    (NaN, never a pass) and each says why; once it answers again, calls score again."""
    s = scorer(server, identity_check_seconds=0)
    server.models = "down"
    ps = s.score(["aspirin", "statins"], ["aspirin", "Statins."])
    assert np.isnan(ps.score).all()
    assert all(r.startswith("unscored: the served verifier could not be used: ") and "could not list its models" in r
               for r in ps.reason)
    assert [r["path"] for r in server.requests][-1] == "/v1/models"  # no classify call was made
    server.models = "ok"
    assert s.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]


@pytest.mark.parametrize("over,sent", [({}, None), ({"truncate_prompt_tokens": 256}, 256), ({"truncate_prompt_tokens": 0}, 0)])
def test_truncate_prompt_tokens_reaches_the_server_only_when_set(server, over, sent):
    scorer(server, **over).score(["aspirin"], ["aspirin"])
    (body,) = [r["body"] for r in server.requests if "body" in r]
    assert body.get("truncate_prompt_tokens") == sent and (("truncate_prompt_tokens" in body) is (sent is not None))


def test_the_score_cache_follows_the_served_model_not_its_name(server, tmp_path):
    """The same definition, URL and model name, with other weights behind them (a redeploy: /v1/models names
    another root): a new scorer asks the server again rather than replay the old weights' cached scores; back on
    the first weights, their cache is read."""
    over = {"url": server.url, "model": server.model}
    a = citebound.load_scorer("remote_nli", overrides=over, cache_dir=str(tmp_path))
    assert a.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    assert a.score(["aspirin"], ["aspirin"]).n_cached == 1
    server.root = "/models/other-weights"
    server.probs = lambda passage, claim: [0.0, 0.0, 1.0]  # the new weights: contradiction, every time
    b = citebound.load_scorer("remote_nli", overrides=over, cache_dir=str(tmp_path))
    ps = b.score(["aspirin"], ["aspirin"])
    assert ps.n_cached == 0 and ps.score.tolist() == [0.0]
    server.root, server.probs = "/models/fake-nli", fake_classifier.entail_probs
    c = citebound.load_scorer("remote_nli", overrides=over, cache_dir=str(tmp_path))
    ps = c.score(["aspirin"], ["aspirin"])
    assert ps.n_cached == 1 and ps.score.tolist() == [1.0]


def test_a_classify_definition_without_a_class_count_is_refused_and_a_score_one_needs_none(server):
    """remote_cross_encoder names no num_classes: as the score API it reads one number per pair (one class);
    switched to the classify API it must say how many classes the model has."""
    assert scorer(server, "remote_cross_encoder").verifier.num_classes == 1
    with pytest.raises(VerifierLoadError) as e:
        scorer(server, "remote_cross_encoder", api="classify")
    assert "api classify needs num_classes (the served model's class count) above positive_class (0)" in str(e.value)


def test_a_score_definition_without_a_threshold_is_refused(server):
    """The score API gives one number per pair, so its verdict is the threshold's: with ``threshold: null`` there
    is none, and the verifier is refused at load (it had passed every pair, a score of 0.0 included)."""
    with pytest.raises(VerifierLoadError) as e:
        scorer(server, "remote_cross_encoder", threshold=None)
    assert "api score needs a threshold in [0, 1] (a pair is supported at or above it), got null" in str(e.value)
    assert scorer(server, "remote_cross_encoder", threshold=0).verifier.threshold == 0  # 0 is a threshold


def test_a_failed_request_in_the_middle_notes_its_own_units_only(server):
    """One unit a request (batch size 1), the third request failing (500): scores by hand for the rest (1, 0.5 and
    0), the third unscored; the notes say why for the third unit only, one note a unit."""
    s = scorer(server, batch_size=1)
    server.fail_on = "every"
    score, verdict, notes = s.verifier.judge([c for c, *_ in CASES], [p for _, p, *_ in CASES])
    assert len(notes) == 4 and [bool(n) for n in notes] == [False, False, True, False] and "500" in notes[2]
    assert score[[0, 1, 3]].tolist() == [1.0, 0.5, 0.0] and np.isnan(score[2])
    assert verdict.tolist() == [True, True, False, False]
