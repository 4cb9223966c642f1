"""Behaviours a user depends on in the service, the batcher, deadlines, limits at their boundaries,
labelling's resume and ids, model digests and training choices; each expected value comes from the
request answered alone, a hand computation or a case where the right and the wrong choice differ."""
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from service_helpers import running

from citebound.scoring import deadline
from citebound.text.citations import expand_numeric
from citebound.text.limits import LimitExceeded, Limits

pytest.importorskip("fastapi")
from citebound.serving import ServeConfig, UnitBatcher  # noqa: E402

WORDS = [f"term{i}" for i in range(400)]


def window_passage(hit: int, n_windows: int) -> str:
    """A passage of ``n_windows`` 600-character stretches; only stretch ``hit`` holds the claim's words."""
    parts = []
    for k in range(n_windows):
        words = "aspirin inhibits cyclooxygenase in platelets " if k == hit else " ".join(WORDS[k * 20:(k + 1) * 20]) + " "
        parts.append((words * 40)[:600])
    return "".join(parts)


def test_concurrent_score_requests_of_different_shapes_each_get_their_own_fields():
    reqs = [{"pairs": [{"claim": "Aspirin inhibits cyclooxygenase.", "passage": window_passage(h, n)}
                       for h, n in shapes]}
            for shapes in ([(0, 3)], [(4, 6), (1, 2)], [(2, 5), (0, 1), (3, 4)], [(5, 8)], [(1, 3), (6, 7)])]
    with running(ServeConfig(verifier="lexical", max_wait_ms=0, max_batch_units=1)) as url:
        alone = [httpx.post(f"{url}/v1/score", json=r).json() for r in reqs]
    # the best window is the first that holds the words (600 characters at stride 300: window 2h - 1 reaches
    # into stretch h), so the requests' best windows differ from each other
    assert [s["best_window"] for a in alone for s in a["scores"]][:3] == [0, 7, 1]
    with running(ServeConfig(verifier="lexical", max_wait_ms=80, max_batch_units=4096)) as url:
        with ThreadPoolExecutor(len(reqs)) as ex:
            together = list(ex.map(lambda r: httpx.post(f"{url}/v1/score", json=r, timeout=30).json(), reqs * 3))
    for got, want in zip(together, alone * 3):
        assert got == want  # scores, verdicts and best windows, field by field


class Slow:
    name, hash, windowing = "slow", "s" * 16, {"window_chars": 600, "stride": 300, "claim_cap": 600}

    def __init__(self, seconds: float):
        from citebound.scoring.loader import load_scorer
        self.inner, self.seconds = load_scorer("lexical"), seconds

    def score(self, claims, passages):
        from citebound.scoring import deadline as d
        for _ in range(int(self.seconds / 0.05)):  # a long model call that checks its deadline between steps
            time.sleep(0.05)
            d.check()
        return self.inner.score(claims, passages)


def test_one_cancelled_request_does_not_stop_its_batch_mates():
    b = UnitBatcher(Slow(0.5), max_units=100, max_wait_ms=200)
    out: dict[str, object] = {}
    quitter, stayer = deadline.WorkToken(None), deadline.WorkToken(None)

    def call(name, token):
        with token.active():
            try:
                out[name] = b.score(["Aspirin inhibits cyclooxygenase."], ["Aspirin inhibits cyclooxygenase."]).score[0]
            except deadline.Cancelled as e:
                out[name] = e

    threads = [threading.Thread(target=call, args=a) for a in (("quitter", quitter), ("stayer", stayer))]
    for t in threads:
        t.start()
    time.sleep(0.3)  # both are in the batch now
    quitter.cancel()
    for t in threads:
        t.join(10)
    b.close()
    assert isinstance(out["quitter"], deadline.Cancelled) and out["stayer"] == pytest.approx(1.0)


def test_a_batch_closes_on_units_not_requests():
    """max_units counts pairs: with a limit of 4, requests of 1 and 3 pairs fill a batch (4 >= 4) that is scored
    at once, and a third request of 1 pair, arriving after, goes to the next batch. Counting requests
    instead (2 < 4) would wait the whole 1.5 s for more and score all three together."""
    from citebound.scoring.loader import load_scorer

    class Recording:
        def __init__(self):
            self.inner, self.calls = load_scorer("lexical"), []

        def score(self, claims, passages):
            self.calls.append((len(claims), time.perf_counter()))
            return self.inner.score(claims, passages)

    rec = Recording()
    b = UnitBatcher(rec, max_units=4, max_wait_ms=1500)
    done: dict[str, float] = {}
    t0 = time.perf_counter()

    def call(name, n):
        b.score(["Aspirin inhibits cyclooxygenase."] * n, ["Aspirin inhibits cyclooxygenase."] * n)
        done[name] = time.perf_counter() - t0

    threads = []
    for name, n in (("a", 1), ("b", 3), ("c", 1)):
        threads.append(threading.Thread(target=call, args=(name, n)))
        threads[-1].start()
        time.sleep(0.1)  # in this order: a is the batch's first, b fills it, c comes after
    for t in threads:
        t.join(10)
    b.close()
    assert [n for n, _ in rec.calls] == [4, 1]
    assert done["a"] < 1.0 and done["b"] < 1.0  # scored when b filled the batch, not at the 1.5 s wait


def test_a_batch_stops_once_every_request_in_it_gave_up():
    tokens = [deadline.WorkToken(None), deadline.WorkToken(None)]
    both = deadline.AllOf(tokens)
    tokens[0].cancel()
    assert not both.cancelled
    tokens[1].cancel()
    assert both.cancelled and deadline.AllOf([tokens[0], None]).cancelled is False


def test_score_endpoint_past_its_timeout_is_a_504():
    with running(ServeConfig(verifier="lexical", request_timeout_s=0.3), scorer=Slow(3)) as url:
        r = httpx.post(f"{url}/v1/score", json={"pairs": [{"claim": "a", "passage": "a"}]}, timeout=30)
    assert r.status_code == 504 and "longer than 0.3 s" in r.json()["detail"]


class Hog(Slow):
    """A verifier whose call on any claim that holds "hog" runs 30 s (checking its deadline every 0.05 s,
    as the model loops do); other calls are the lexical verifier's, at once."""

    def __init__(self):
        super().__init__(30.0)

    def score(self, claims, passages):
        if any("hog" in c for c in claims):
            return super().score(claims, passages)
        return self.inner.score(claims, passages)


def _hog_body(route: str, claim: str) -> dict:
    if route == "/v1/score":
        return {"pairs": [{"claim": claim, "passage": "Aspirin inhibits cyclooxygenase in platelets."}]}
    return {"answer": f"{claim} [1].", "passages": ["Aspirin inhibits cyclooxygenase in platelets."]}


@pytest.mark.parametrize("route", ["/v1/score", "/v1/guard"])
@pytest.mark.parametrize("how", ["client disconnects", "request timeout"])
def test_a_gone_or_late_request_releases_the_verifier_within_a_second(route, how):
    """Client A's request would hold the verifier for 30 s. A either disconnects at 0.5 s or meets the
    service's 0.5 s request timeout; client B, arriving 0.3 s later, must then be answered within a second
    of its latency alone (it waited behind A's 30 s call before the fix), and A's own answer is 504 on a
    timeout. Measured: the two clients' latencies."""
    timeout = 0.5 if how == "request timeout" else 60.0
    with running(ServeConfig(verifier="lexical", request_timeout_s=timeout, max_wait_ms=5, reattributor=None),
                 scorer=Hog()) as url:
        httpx.post(url + route, json=_hog_body(route, "Aspirin warms up."), timeout=30)  # first-request costs
        t0 = time.perf_counter()
        alone = httpx.post(url + route, json=_hog_body(route, "Aspirin inhibits cyclooxygenase."), timeout=30)
        base = time.perf_counter() - t0
        assert alone.status_code == 200
        a_out: dict[str, object] = {}

        def client_a():
            t = time.perf_counter()
            try:
                a_out["status"] = httpx.post(url + route, json=_hog_body(route, "Aspirin hog cyclooxygenase."),
                                             timeout=0.5 if how == "client disconnects" else 30).status_code
            except httpx.TimeoutException:
                a_out["status"] = "client gave up"
            a_out["s"] = time.perf_counter() - t

        a = threading.Thread(target=client_a)
        a.start()
        time.sleep(0.8)  # A is being scored now, and has gone or timed out 0.3 s ago
        t = time.perf_counter()
        b = httpx.post(url + route, json=_hog_body(route, "Aspirin inhibits cyclooxygenase."), timeout=30)
        b_latency = time.perf_counter() - t
        a.join(35)
    assert b.status_code == 200 and b.json() == alone.json()
    assert b_latency < base + 1.0, f"B waited {b_latency:.2f} s (alone {base:.2f} s): A still held the verifier"
    if how == "request timeout":
        assert a_out["status"] == 504 and a_out["s"] < 2.0
    else:
        assert a_out["status"] == "client gave up"


@pytest.mark.parametrize("extra,status", [(-1, 200), (0, 200), (1, 413)])
def test_a_body_at_max_request_bytes_passes_and_one_byte_more_is_refused(extra, status):
    body = json.dumps({"answer": "Aspirin lowers fever [1].", "passages": ["Aspirin lowers fever."]}).encode()
    limit = len(body) + 10
    padded = body[:-1] + b" " * (limit - len(body) + extra) + b"}"  # whitespace inside the JSON object
    with running(ServeConfig(verifier="lexical", limits=Limits(max_request_bytes=limit))) as url:
        chunked = httpx.post(f"{url}/v1/guard", content=iter([padded[:50], padded[50:]]),
                             headers={"content-type": "application/json"})
        sized = httpx.post(f"{url}/v1/guard", content=padded, headers={"content-type": "application/json"})
    assert len(padded) == limit + extra and chunked.status_code == status and sized.status_code == status


def test_the_proxy_headers_summarise_the_report():
    from test_hostile import CHAT, Upstream

    content = "Statins lower LDL cholesterol [2]. Aspirin cures migraine [1]. Nothing holds [7]."
    up = Upstream(json.dumps({"choices": [{"message": {"content": content}}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT)
    finally:
        up.close()
    rep = r.json()["citebound"]["report"]
    assert (rep["verified"], rep["flagged"], rep["invalid"]) == (1, 1, 1)
    h = r.headers
    assert (h["x-citebound-citations"], h["x-citebound-flagged"], h["x-citebound-invalid"]) == ("3", "1", "1")
    assert h["x-citebound-review-budget"] == f"{2 / 3:.4f}"


# ---------------------------------------------------------------- limits at N - 1, N, N + 1


@pytest.mark.parametrize("name,make", [
    ("max_answer_chars", lambda n: "a" * n),
    ("max_sentences", lambda n: " ".join(["Claim."] * n)),
    ("max_citations_per_answer", lambda n: " ".join(["Claim [1]."] * n)),
    ("max_citations_per_sentence", lambda n: "Claim " + "".join(f"[{1 + k % 2}]" for k in range(n)) + "."),
])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_every_answer_limit_at_n_minus_1_n_and_n_plus_1(name, make, delta):
    from citebound.guarding.guard import Guard

    n = 50
    g = Guard("lexical", reattributor=None, limits=Limits.from_mapping({name: n}))
    answer = make(n + delta)
    if delta <= 0:
        g.guard(answer, ["Claim one.", "Claim two."])
    else:
        with pytest.raises(LimitExceeded, match=name):
            g.guard(answer, ["Claim one.", "Claim two."])


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_passage_limits_at_n_minus_1_n_and_n_plus_1(delta):
    from citebound.guarding.guard import Guard

    g = Guard("lexical", reattributor=None, limits=Limits(max_passages=3, max_passage_chars=40))
    ok_passages, long = ["Claim one."] * (3 + delta), ["x" * (40 + delta)]
    for passages, name in ((ok_passages, "max_passages"), (long, "max_passage_chars")):
        if delta <= 0:
            g.guard("Claim one [1].", passages)
        else:
            with pytest.raises(LimitExceeded, match=name):
                g.guard("Claim one [1].", passages)


def test_a_markers_expansion_stops_at_the_budget_not_after():
    assert expand_numeric("1-10", max_range=1000, budget=10) == list(range(1, 11))
    with pytest.raises(LimitExceeded, match="max_citations_per_sentence"):
        expand_numeric("1-11", max_range=1000, budget=10)
    with pytest.raises(LimitExceeded):
        expand_numeric("1-5, 6-10, 11", max_range=1000, budget=10)


# ---------------------------------------------------------------- labelling


META = {"sample_seed": 0, "sample_size": 2, "input_sha256": "abc", "verifier": "lexical", "verifier_hash": "h"}


def test_a_resume_refuses_a_labels_file_made_from_another_input(tmp_path):
    from citebound.labelling.store import LabelError, LabelStore

    p = tmp_path / "l.jsonl"
    p.write_text(json.dumps({"item_id": "a", "judgement": "supported", "label": 1, "score": 0.5, **META}) + "\n")
    LabelStore(p, META)
    with pytest.raises(LabelError, match="input_sha256='abc', this session has 'other'"):
        LabelStore(p, {**META, "input_sha256": "other"})


def test_answers_sharing_an_id_get_item_ids_of_their_own():
    from citebound.labelling.store import answer_ids, citation_population

    recs = [{"id": "x", "answer": "A holds [1].", "passages": ["A holds."]},
            {"id": "x", "answer": "A holds [1].", "passages": ["A holds."]}]
    assert answer_ids(recs, [1, 2]) == ["line1", "line2"]
    assert answer_ids([{"id": "p"}, {"id": "q"}], [1, 2]) == ["p", "q"]
    items, _ = citation_population(recs, [1, 2], "in.jsonl")
    assert len({it.item_id for it in items}) == 2


def test_an_echo_record_citing_one_past_its_passages_names_the_line(tmp_path):
    from citebound.labelling.store import LabelError, citation_population

    rec = {"answer": "A [1]. B [3].", "passages": ["A.", "B."], "citation_base": 1,
           "report": {"audit": [{"sentence_index": 1, "cited": 3, "claim": "B.", "action": "verified", "score": 0.9,
                                 "evidence": {"start": 0, "end": 2}}]}}
    with pytest.raises(LabelError, match=r"in.jsonl:4: audit entry 0 cites \[3\]"):
        citation_population([rec], [4], "in.jsonl")


# ---------------------------------------------------------------- model digests and training choices


def test_a_models_digest_follows_its_bytes_even_at_the_same_size_and_path(tmp_path):
    import os

    from citebound.scoring.hashing import model_digest

    head = tmp_path / "head.json"
    head.write_text('{"coef": [0.1, 0.2]}')
    st = head.stat()
    first = model_digest(tmp_path)
    head.write_text('{"coef": [0.3, 0.4]}')  # retrained: same size, same path
    os.utime(head, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert head.stat().st_size == st.st_size and model_digest(tmp_path) != first
    import hashlib
    assert model_digest(tmp_path) == hashlib.sha256(head.read_bytes()).hexdigest()[:16]


def test_a_tie_in_the_choice_of_c_goes_to_the_strongest_regularisation():
    import pandas as pd

    from citebound.training.evaluation import evaluate
    from citebound.training.head import FEATURES

    rng = np.random.default_rng(0)
    n = 40
    y = np.r_[np.zeros(n // 2, int), np.ones(n // 2, int)]
    x = y[:, None] + 0.01 * rng.normal(size=(n, len(FEATURES)))  # separable: every C ranks perfectly
    train = pd.DataFrame({"source": ["a", "b"] * (n // 2), "label": y})
    units = (x, np.arange(n))
    _, chosen = evaluate(train, units, {}, {"all": ["a", "b"]}, [0.1, 1.0, 10.0], n_boot=10, seed=0)
    assert chosen["all"]["C"] == 0.1


def test_copies_of_a_claim_land_in_one_fold_whatever_their_case():
    from citebound.training.evaluation import claim_folds

    claims = ["Aspirin works.", "aspirin WORKS", "Statins help.", "statins help!", "Coffee wakes.", "COFFEE WAKES"]
    folds = claim_folds(claims, 3, seed=1)
    assert folds[0] == folds[1] and folds[2] == folds[3] and folds[4] == folds[5] and len(set(folds)) == 3


def test_a_merged_call_that_fails_fails_only_the_job_whose_units_caused_it():
    """Deterministic: three jobs in one merged verifier call, the middle one's text makes the scorer raise."""
    from test_hostile import Failing

    from citebound.serving.batcher import _Job

    b = UnitBatcher(Failing(), max_units=100, max_wait_ms=0)
    jobs = [_Job(["Statins lower LDL cholesterol."], ["Statins lower LDL cholesterol."]),
            _Job(["boom claim"], ["x"]),
            _Job(["Aspirin inhibits cyclooxygenase.", "Statins lower LDL."], ["Aspirin inhibits cyclooxygenase.", "y"])]
    b._score(jobs)
    b.close()
    assert jobs[0].future.result().score.tolist() == [1.0]
    with pytest.raises(RuntimeError, match="verifier failed"):
        jobs[1].future.result()
    assert jobs[2].future.result().score.tolist()[0] == 1.0 and len(jobs[2].future.result().score) == 2


@pytest.mark.slow  # the real embedding verifier on a large request
@pytest.mark.parametrize("route", ["/v1/guard", "/v1/score"])
def test_a_large_in_bounds_request_whose_client_leaves_releases_the_real_verifier(route):
    """#52 item 3, as the issue measured it (scaled to 2 cores): A sends 60 citations over two 120,000-character
    passages to the real embedding verifier (~800 windows to embed, ~20 s) and leaves after 2 s; B's one
    small request, sent at 3 s, is answered within 1 s of its latency alone (it waited for A's whole
    embedding loop before every batch checked the request)."""
    import random

    rng = random.Random(7)
    words = [f"w{n}x" for n in range(5000)]

    def passage():
        return " ".join(rng.choice(words) for _ in range(24_000))[:120_000]

    big_passages = [passage(), passage()]
    claims = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(60)]
    answer = " ".join(f"Claim {c} [{1 + k % 2}]." for k, c in enumerate(claims))
    small = {"answer": "Aspirin inhibits cyclooxygenase [1].", "passages": ["Aspirin inhibits cyclooxygenase."]}
    if route == "/v1/score":
        big = {"pairs": [{"claim": c, "passage": big_passages[k % 2]} for k, c in enumerate(claims)]}
        small = {"pairs": [{"claim": "Aspirin inhibits cyclooxygenase.", "passage": "Aspirin inhibits cyclooxygenase."}]}
    else:
        big = {"answer": answer, "passages": big_passages}
    with running(ServeConfig(verifier="embedding", request_timeout_s=120, reattributor=None)) as url:
        t0 = time.perf_counter()
        assert httpx.post(url + route, json=small, timeout=60).status_code == 200
        base = time.perf_counter() - t0

        def client_a():
            try:
                httpx.post(url + route, json=big, timeout=2.0)
            except httpx.TimeoutException:
                pass

        a = threading.Thread(target=client_a)
        a.start()
        time.sleep(3.0)
        t = time.perf_counter()
        b = httpx.post(url + route, json=small, timeout=60)
        b_latency = time.perf_counter() - t
        a.join(60)
    assert b.status_code == 200
    assert b_latency < base + 1.0, f"B waited {b_latency:.2f} s (alone {base:.2f} s): A still held the verifier"


@pytest.mark.parametrize("max_units,max_wait_ms,ok", [(0, 5, False), (1, 5, True), (4, -1, False), (4, 0, True)])
def test_a_batcher_needs_at_least_one_unit_and_no_negative_wait(max_units, max_wait_ms, ok):
    from citebound.scoring.loader import load_scorer

    if not ok:
        with pytest.raises(ValueError, match="max_units must be >= 1 and max_wait_ms >= 0"):
            UnitBatcher(load_scorer("lexical"), max_units=max_units, max_wait_ms=max_wait_ms)
        return
    b = UnitBatcher(load_scorer("lexical"), max_units=max_units, max_wait_ms=max_wait_ms)
    assert b.score(["aspirin"], ["aspirin"]).score.tolist() == [1.0]
    b.close()
    assert not b.thread.is_alive()


def test_closing_while_a_batch_gathers_scores_it_and_stops_the_worker():
    """The worker holds one job and would wait 3 s for more; close() ends the gathering at once: the job is
    scored, the worker stops, and close returns well before the 3 s (or its own 10 s join)."""
    from citebound.scoring.loader import load_scorer

    b = UnitBatcher(load_scorer("lexical"), max_units=100, max_wait_ms=3000)
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("s", b.score(["aspirin"], ["aspirin"]).score.tolist()))
    t.start()
    time.sleep(0.3)  # the worker took the job and is gathering
    t0 = time.perf_counter()
    b.close()
    took = time.perf_counter() - t0
    t.join(5)
    assert got == {"s": [1.0]} and not b.thread.is_alive() and took < 1.5
