"""citebound label: the seeded uniform sample, labels that survive a crash, the live panel, agreement,
calibrate --labels on the file; and the page itself in headless Chromium driven by Playwright
(30 items by keyboard, an undo, SIGKILL midway, restart, finish)."""
import json
import math
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import httpx
import numpy as np
import pytest
from conftest import ROOT
from service_helpers import free_port, wait_ready
from sklearn.metrics import cohen_kappa_score

from citebound.cli.main import main
from citebound.labelling.store import (
    LabelError,
    LabelSession,
    LabelStore,
    agreement,
    citation_population,
    panel,
    score_items,
    uniform_sample,
)
from citebound.scoring.loader import load_scorer


def population(records: list[dict], base: int = 1):
    """Every labellable citation of the records, scored with the lexical verifier."""
    items, counts = citation_population(records, list(range(1, len(records) + 1)), "answers.jsonl", base=base)
    return score_items(items, load_scorer("lexical")), counts


def token(url: str) -> dict[str, str]:
    """The page's per-session token, as the page's own script sends it."""
    import re
    return {"x-citebound-token": re.search(r'name="citebound-token" content="([^"]+)"', httpx.get(url + "/").text)[1]}

TOPICS = ["aspirin", "statins", "insulin", "vaccines", "antibiotics", "caffeine", "melatonin", "ibuprofen"]


def answers_file(path: Path, n_answers: int = 12) -> Path:
    """Answers whose citations point at the right passage or a wrong one (lexical verifier decides)."""
    lines = []
    for i in range(n_answers):
        topics = [TOPICS[(i + k) % len(TOPICS)] for k in range(4)]
        passages = [f"Studies of {t} in adults report that {t} changes {t}-related outcomes in trial {i}." for t in topics]
        sents = [f"Clinical work shows {topics[k]} changes {topics[k]}-related outcomes [{1 + (k + (i % 2)) % 4}]."
                 for k in range(4)]
        lines.append(json.dumps({"id": f"a{i}", "answer": " ".join(sents), "passages": passages}))
    path.write_text("\n".join(lines) + "\n")
    return path


META = {"sample_seed": 3, "sample_size": 5, "input_sha256": "x", "verifier": "lexical", "verifier_hash": "h"}


def test_sample_is_seeded_uniform_and_without_repeats(tmp_path):
    items, counts = population([json.loads(x) for x in answers_file(tmp_path / "a.jsonl").read_text().splitlines()])
    assert counts == {"answers": 12, "citations": 48, "invalid_not_sampled": 0, "answers_skipped": 0,
                      "skipped": []} and len(items) == 48
    a, b, c = uniform_sample(items, 20, 5), uniform_sample(items, 20, 5), uniform_sample(items, 20, 6)
    assert [x.item_id for x in a] == [x.item_id for x in b] != [x.item_id for x in c]
    assert len({x.item_id for x in a}) == 20 and [x.position for x in a] == list(range(20))
    # uniform: over many seeds every citation is drawn about equally often (20 of 48 each time)
    hits = {}
    for s in range(600):
        for x in uniform_sample(items, 20, s):
            hits[x.item_id] = hits.get(x.item_id, 0) + 1
    expected = 600 * 20 / 48
    assert len(hits) == 48 and all(abs(h - expected) < 5 * math.sqrt(expected) for h in hits.values())


def test_store_appends_undoes_atomically_and_resumes(tmp_path):
    p = tmp_path / "labels.jsonl"
    s = LabelStore(p, META)
    for i in range(3):
        s.append({"item_id": f"i{i}", "judgement": ["unsupported", "supported"][i % 2], "label": i % 2, "score": 0.5,
                  **META})
    assert s.undo()["item_id"] == "i2"
    s.append({"item_id": "i2", "judgement": "cant_tell", "label": None, "score": 0.5, **META})
    again = LabelStore(p, META)
    assert [r["item_id"] for r in again.records] == ["i0", "i1", "i2"] and again.records[2]["label"] is None
    with pytest.raises(LabelError, match="sample_seed=3, this session has 4"):
        LabelStore(p, {**META, "sample_seed": 4})
    p.write_text(p.read_text() + '{"item_id": "i3", "lab')  # a crash mid-write
    with pytest.raises(LabelError, match=r"labels.jsonl:4: not valid JSON .*--repair-truncated"):
        LabelStore(p, META)
    repaired = LabelStore(p, META, repair_truncated=True)  # the partial click is dropped, the rest kept
    assert repaired.repaired and [r["item_id"] for r in repaired.records] == ["i0", "i1", "i2"]
    assert p.read_text().endswith("\n") and len(p.read_text().splitlines()) == 3


def test_session_keeps_the_order_and_the_panel_matches_a_hand_calibration(tmp_path):
    items, _ = population([json.loads(x) for x in answers_file(tmp_path / "a.jsonl").read_text().splitlines()])
    sample = uniform_sample(items, 12, 1)
    sess = LabelSession(sample, LabelStore(tmp_path / "l.jsonl", {**META, "sample_size": 12}), "ann", alpha=0.2)
    with pytest.raises(LabelError, match="is not the one to label now"):
        sess.label(sample[1].item_id, "supported")
    for k, it in enumerate(sample):
        assert sess.current().item_id == it.item_id
        assert "score" not in sess.state()["item"]  # hidden unless asked for
        sess.label(it.item_id, "unsupported" if k % 2 else ("cant_tell" if k == 4 else "supported"))
    st = sess.state()
    assert st["done"] and st["panel"]["labelled"] == 12 and st["panel"]["cant_tell"] == 1
    uns = sorted(it.score for k, it in enumerate(sample) if k % 2)
    n = len(uns)  # 6 unsupported; alpha 0.2: k = ceil(7 * 0.8) = 6 -> the largest
    k = math.ceil((n + 1) * 0.8)
    assert st["panel"]["tau"] == pytest.approx(uns[k - 1]) and st["panel"]["warning"] == ""
    # with 3 unsupported at alpha 0.2, 1/alpha - 1 = 4 are needed: one more
    few = panel([{"label": 0, "score": 0.1}] * 3 + [{"label": 1, "score": 0.9}], 0.2, 10)
    assert few["tau"] is None and few["warning"].startswith("1 more unsupported labels needed")
    assert st["panel"]["in_force"] == "marginal"  # 6 unsupported: too few for the PAC tau, so the conformal one


def test_the_panel_shows_the_tau_in_force_beside_its_guarantee():
    """#52: with enough unsupported labels the guard deploys the PAC tau, and the panel shows that one (the
    conformal tau only as conformal_tau): the PAC rank by hand, the k-th smallest unsupported score with k the
    smallest for which P(Binomial(n, 1 - alpha) >= k) <= delta."""
    from scipy.stats import binom

    uns = [i / 400 for i in range(200)]
    records = [{"label": 0, "score": s} for s in uns] + [{"label": 1, "score": 0.9}] * 50
    p = panel(records, 0.1, 250)
    n = len(uns)
    k = next(k for k in range(1, n + 1) if binom.sf(k - 1, n, 0.9) <= 0.1)
    assert p["in_force"] == "pac" and p["tau"] == pytest.approx(sorted(uns)[k - 1])
    assert p["conformal_tau"] == pytest.approx(sorted(uns)[math.ceil((n + 1) * 0.9) - 1]) != p["tau"]


def test_agreement_against_scikit_learn_and_by_hand():
    a = [{"item_id": f"i{k}", "label": v} for k, v in enumerate([1, 1, 1, 0, 0, 1, 0, 1, None, 1])]
    b = [{"item_id": f"i{k}", "label": v} for k, v in enumerate([1, 1, 0, 0, 1, 1, 0, 1, 1, None])]
    b.append({"item_id": "only-b", "label": 1})
    r = agreement(a, b, n_boot=500, seed=1)
    x = [1, 1, 1, 0, 0, 1, 0, 1]
    y = [1, 1, 0, 0, 1, 1, 0, 1]
    assert (r["n"], r["cant_tell_either"], r["items_only_one"]) == (8, 2, 1)
    assert r["kappa"]["estimate"] == pytest.approx(cohen_kappa_score(x, y))
    assert r["observed_agreement"]["estimate"] == pytest.approx(6 / 8)
    pi = (5 / 8 + 5 / 8) / 2  # mean 'supported' marginal; AC1 = (po - pe) / (1 - pe), pe = 2 pi (1 - pi)
    pe = 2 * pi * (1 - pi)
    assert r["ac1"]["estimate"] == pytest.approx((6 / 8 - pe) / (1 - pe))
    for k in ("kappa", "ac1", "observed_agreement"):
        assert r[k]["ci_low"] <= r[k]["estimate"] <= r[k]["ci_high"]


def test_agreement_table_and_intervals_with_labellers_who_disagree_unevenly():
    """a = 1 1 1 1 0 0 1 0, b = 1 0 0 1 0 1 1 0: both supported 3 (items 0, 3, 6), a alone 2 (1, 2), b alone 1 (5),
    both unsupported 2 (4, 7). Each interval is the 2.5 and 97.5 percentiles over the same 400 item resamples
    (rows of ``default_rng(5).integers(8, size=(400, 8))``), each statistic recomputed per resample: observed
    agreement as the share of equal labels, kappa by scikit-learn, AC1 by its formula; a resample where a
    statistic is undefined (kappa with both labellers constant) is left out."""
    xa, xb = [1, 1, 1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 1, 1, 0]
    a = [{"item_id": f"i{k}", "label": v} for k, v in enumerate(xa)]
    b = [{"item_id": f"i{k}", "label": v} for k, v in enumerate(xb)]
    r = agreement(a, b, n_boot=400, seed=5)
    assert r["table"] == {"both_supported": 3, "a_supported_b_unsupported": 2, "a_unsupported_b_supported": 1,
                          "both_unsupported": 2}
    x, y = np.array(xa), np.array(xb)

    def ac1(u, v):
        pi = (u.mean() + v.mean()) / 2
        pe = 2 * pi * (1 - pi)
        return ((u == v).mean() - pe) / (1 - pe)

    def kappa(u, v):
        if len(set(u)) == len(set(v)) == 1 and u[0] == v[0]:
            return math.nan
        return cohen_kappa_score(u, v)

    rows = np.random.default_rng(5).integers(8, size=(400, 8))
    for name, f in (("observed_agreement", lambda u, v: (u == v).mean()), ("kappa", kappa), ("ac1", ac1)):
        boot = np.array([f(x[i], y[i]) for i in rows], float)
        boot = boot[np.isfinite(boot)]
        assert r[name]["estimate"] == pytest.approx(f(x, y))
        assert (r[name]["ci_low"], r[name]["ci_high"]) == pytest.approx(
            (np.quantile(boot, 0.025), np.quantile(boot, 0.975))), name


def test_calibrate_reads_a_label_file_and_records_the_sample(tmp_path, capsys):
    items, _ = population([json.loads(x) for x in answers_file(tmp_path / "a.jsonl").read_text().splitlines()])
    sample = uniform_sample(items, 30, 9)
    meta = {**META, "sample_seed": 9, "sample_size": 30}
    sess = LabelSession(sample, LabelStore(tmp_path / "l.jsonl", meta), "ann")
    for k, it in enumerate(sample[:25]):  # 5 left unlabelled
        sess.label(it.item_id, "cant_tell" if k in (3, 7) else ("unsupported" if k % 2 else "supported"))
    buf = StringIO()
    with redirect_stdout(buf):
        assert main(["calibrate", "--labels", str(tmp_path / "l.jsonl"), "--alpha", "0.2"]) == 0
    cal = json.loads(buf.getvalue())
    uns = sorted(it.score for k, it in enumerate(sample[:25]) if k % 2 and k not in (3, 7))
    k = math.ceil((len(uns) + 1) * 0.8)
    assert cal["verifier"] == "lexical" and cal["n_unsupported"] == len(uns) == 10
    assert cal["tau"] == pytest.approx(uns[k - 1])
    assert cal["sample"] == {"seed": 9, "size": 30, "labelled": 25, "cant_tell": 2, "not_labelled": 5,
                             "labellers": ["ann"]}
    assert "2 can't-tell and 5 unlabelled" in capsys.readouterr().err


# ---------------------------------------------------------------- the page, in a real browser


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium not installed (apt-get install chromium)")
    return exe


def _start(args: list[str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "label", *args, "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if wait_ready(f"http://127.0.0.1:{port}", "/api/state", attempts=300):
        return proc
    proc.kill()
    raise AssertionError(proc.stdout.read())


@pytest.mark.slow  # a real browser
def test_labelling_page_by_keyboard_with_undo_and_a_kill_midway(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    exe = _chromium()
    src = answers_file(tmp_path / "answers.jsonl")
    out = tmp_path / "labels.jsonl"
    port = free_port()
    args = ["--input", str(src), "--out", str(out), "--sample", "30", "--seed", "11", "--verifier", "lexical",
            "--labeller", "tester"]

    def judgement(k: int) -> str:
        return "cant_tell" if k % 10 == 7 else ("unsupported" if k % 3 == 0 else "supported")

    keys = {"supported": "s", "unsupported": "u", "cant_tell": "c"}
    clicked: dict[str, str] = {}
    proc = _start(args, port)
    try:
        with playwright.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")

            def label(k: int) -> None:
                page.wait_for_function(f"document.getElementById('progress').textContent.startsWith('{k} of 30')")
                item = page.evaluate("state.item.item_id")
                # the best window is highlighted in the passage and the sentence in the answer
                assert page.locator("mark.best").count() == 1 and page.locator("span.sentence").count() == 1
                page.keyboard.press(keys[judgement(k)])
                page.wait_for_function(f"document.getElementById('progress').textContent.startsWith('{k + 1} of 30')")
                clicked[item] = judgement(k)

            for k in range(10):
                label(k)
            # undo the tenth: it is shown again, and labelled again
            last = list(clicked)[-1]
            page.keyboard.press("z")
            page.wait_for_function("document.getElementById('progress').textContent.startsWith('9 of 30')")
            assert page.evaluate("state.item.item_id") == last
            del clicked[last]
            label(9)
            for k in range(10, 15):
                label(k)
            # the score is hidden until asked for
            assert page.locator("#score").is_hidden()
            page.keyboard.press("h")
            page.wait_for_selector("#score:not([hidden])")
            # a note: its keys (s, u) label nothing while it is typed; it goes with this label only, and the next
            # citation starts with its score hidden again and an empty note
            noted = page.evaluate("state.item.item_id")
            page.keyboard.press("n")
            page.keyboard.type("uses s and u")
            page.wait_for_timeout(300)
            assert page.evaluate("document.getElementById('progress').textContent").startswith("15 of 30")
            page.keyboard.press("Escape")
            label(15)
            assert page.locator("#score").is_hidden() and page.input_value("#note") == ""
            # SIGKILL the server midway, restart it, reload the page: it resumes at item 16
            proc.kill()
            proc.wait(timeout=10)
            proc = _start(args, port)
            page.reload()
            for k in range(16, 30):
                label(k)
                if k == 20:
                    page.screenshot(path=str(tmp_path / "labelling_page.png"))
            page.wait_for_function("document.getElementById('claim').textContent.startsWith('Every citation')")
            # the finished page's commands fit their panel (#52: they overflowed it)
            fits = page.evaluate("(() => { const e = document.getElementById('next-steps'); "
                                 "return [e.scrollWidth, e.clientWidth, e.textContent.length]; })()")
            assert fits[2] > 40 and fits[0] <= fits[1], fits
            browser.close()
    finally:  # the server is stopped whether the page's checks passed or not
        proc.terminate()
        proc.wait(timeout=30)

    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(records) == 30 and len({r["item_id"] for r in records}) == 30  # no duplicates
    assert {r["item_id"]: r["judgement"] for r in records} == clicked  # exactly the labels clicked
    assert [r["position"] for r in records] == list(range(30))  # in the sample's order
    assert all(r["labeller"] == "tester" and r["sample_seed"] == 11 for r in records)
    assert {r["item_id"]: r["note"] for r in records if r["note"]} == {noted: "uses s and u"}
    shot = tmp_path / "labelling_page.png"
    assert shot.stat().st_size > 20_000
    if Path(ROOT / "docs").is_dir() and not (ROOT / "docs" / "labelling_page.png").exists():
        shutil.copy(shot, ROOT / "docs" / "labelling_page.png")
    # calibrating from the file gives tau computed by hand from the same scores and labels
    buf = StringIO()
    with redirect_stdout(buf):
        assert main(["calibrate", "--labels", str(out), "--alpha", "0.2"]) == 0
    cal = json.loads(buf.getvalue())
    uns = np.sort([r["score"] for r in records if r["label"] == 0])
    k = math.ceil((len(uns) + 1) * (1 - 0.2))
    assert cal["tau"] == pytest.approx(uns[k - 1])
    assert cal["sample"]["cant_tell"] == sum(1 for r in records if r["judgement"] == "cant_tell") == 3


@pytest.mark.slow  # the README's recalibration walkthrough, end to end on a released source
def test_recalibrate_walkthrough_on_a_released_source(tmp_path, mirror):
    """convert -> guard -> label (the clicks driven over HTTP) -> calibrate -> guard with the calibration."""
    nora = tmp_path / "nora.jsonl"
    assert main(["convert", "--format", "nora", str(mirror / "scholarqabench/scholarqa_cs/qa_metadata_all.jsonl"),
                 "--out", str(nora)]) == 0
    assert main(["guard", "--input", str(nora), "--verifier", "lexical", "--quiet", "--out",
                 str(tmp_path / "guarded.jsonl")]) in (0, 2)  # 2: answers with blank passages, reported
    port = free_port()
    out = tmp_path / "labels.jsonl"
    proc = _start(["--input", str(nora), "--out", str(out), "--sample", "60", "--seed", "1", "--verifier", "lexical"],
                  port)
    url = f"http://127.0.0.1:{port}"
    try:
        headers = token(url)
        state = httpx.get(f"{url}/api/state").json()
        while not state["done"]:  # a stand-in labeller: unsupported when the claim shares few words with the window
            it = state["item"]
            window = it["passage"][it["window_start"]:it["window_end"]].lower()
            words = [w for w in it["claim"].lower().split() if len(w) > 4]
            share = sum(w in window for w in words) / max(1, len(words))
            state = httpx.post(f"{url}/api/label", headers=headers, json={
                "item_id": it["item_id"], "judgement": "supported" if share > 0.5 else "unsupported"}).json()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    cal = tmp_path / "cal.json"
    assert main(["calibrate", "--labels", str(out), "--alpha", "0.1", "--out", str(cal)]) == 0
    c = json.loads(cal.read_text())
    assert c["sample"]["size"] == 60 and c["sample"]["labelled"] == 60 and math.isfinite(c["tau"])
    buf = StringIO()
    with redirect_stdout(buf):
        main(["guard", "--input", str(nora), "--verifier", "lexical", "--quiet", "--calibration", str(cal)])
    reports = [json.loads(x)["report"] for x in buf.getvalue().splitlines()]
    # the deployed tau: the PAC one where the sample's unsupported labels are enough for it, else the conformal one
    deployed = c["pac"]["tau"] if c["pac"]["tau"] is not None else c["tau"]
    assert reports and all(r["rule"] == f"pass iff score > tau = {deployed:.6g}" for r in reports)
    assert all("the catch rate is >= 0.9" in r["guarantee"] or "flagged with probability >= 0.9" in r["guarantee"]
               for r in reports)


def test_calibrate_counts_cant_tell_records_of_a_hand_written_file(tmp_path, capsys):
    # no citebound label metadata: can't-tell records are still skipped and counted, never a crash
    rows = [{"claim": "Aspirin lowers fever.", "passage": "Aspirin lowers fever in adults.", "label": 1},
            {"claim": "Aspirin cures cancer.", "passage": "Aspirin lowers fever in adults.", "label": 0},
            {"claim": "Statins grow hair.", "passage": "Aspirin lowers fever in adults.", "label": None,
             "judgement": "cant_tell"}]
    src = tmp_path / "hand.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    buf = StringIO()
    with redirect_stdout(buf):
        assert main(["calibrate", "--labels", str(src), "--verifier", "lexical", "--alpha", "0.5"]) == 0
    cal = json.loads(buf.getvalue())
    assert (cal["n_unsupported"], cal["n_supported"]) == (1, 1) and "sample" not in cal
    assert "1 can't-tell records are left out" in capsys.readouterr().err


def test_guard_echo_input_records_the_base_it_guarded_with(tmp_path):
    src = tmp_path / "a.json"
    src.write_text(json.dumps({"id": "x", "answer": "Aspirin lowers fever [0].", "passages": ["Aspirin lowers fever."]}))
    buf = StringIO()
    with redirect_stdout(buf):
        assert main(["guard", "--input", str(src), "--verifier", "lexical", "--base", "0", "--echo-input"]) == 0
    out = json.loads(buf.getvalue())
    assert out["citation_base"] == 0 and out["passages"] == ["Aspirin lowers fever."]
    items, counts = population([out])  # the default base is 1; the record says 0
    assert counts["invalid_not_sampled"] == 0 and items[0].passage == "Aspirin lowers fever." and items[0].cited == 0


def test_one_over_limit_answer_is_skipped_and_counted_not_the_whole_session(tmp_path):
    """#52 item 9: five answers, the third past max_range: four are sampled from, the skip is counted with
    its line."""
    from citebound.text.limits import Limits

    recs = [json.loads(x) for x in answers_file(tmp_path / "a.jsonl", 5).read_text().splitlines()]
    recs[2]["answer"] = "Aspirin works [1-5000]."
    items, counts = citation_population(recs, [1, 2, 3, 4, 5], "answers.jsonl", limits=Limits())
    assert counts["answers"] == 5 and counts["answers_skipped"] == 1 and len(items) == 16  # 4 answers x 4
    assert counts["skipped"][0].startswith("answers.jsonl:3: ") and "max_range" in counts["skipped"][0]
    assert not any(it.answer_id == "a2" for it in items)


@pytest.mark.parametrize("line,message", [
    ('{"item_id": "x", "judgement": "supported", "label": 1}', "no 'score'"),
    ('["not", "an", "object"]', "expected a JSON object"),
    ('{"judgement": "supported", "label": 1, "score": 0.5}', "no 'item_id'"),
])
def test_hand_edited_label_files_are_one_clear_error_on_resume_and_in_agreement(tmp_path, capsys, line, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    with pytest.raises(LabelError, match=message):
        LabelStore(bad, META)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"item_id": "x", "judgement": "supported", "label": 1, "score": 0.5}) + "\n")
    assert main(["label", "--agreement", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1" in err and message in err and "Traceback" not in err


def test_a_null_score_counts_for_no_tau_but_does_not_break_the_panel():
    records = [{"label": 0, "score": None}] + [{"label": 0, "score": 0.1 * k} for k in range(9)] + [
        {"label": 1, "score": 0.95}]
    p = panel(records, 0.2, 20)
    assert p["unsupported"] == 9 and p["tau"] is not None  # the nine with a score give a tau at alpha 0.2


@pytest.mark.parametrize("alpha,n_uns,more", [
    (0.15, 5, 1), (0.15, 6, 0),  # 1/0.15 - 1 = 5.67: 6 needed ((6 + 1) * 0.85 = 5.95 -> rank 6 <= 6)
    (0.1, 8, 1), (0.1, 9, 0),  # 1/0.1 - 1 = 9 exactly: ((9 + 1) * 0.9 = 9 -> rank 9 <= 9)
    (0.3, 2, 1), (0.3, 3, 0),  # 1/0.3 - 1 = 2.33: 3 needed ((3 + 1) * 0.7 = 2.8 -> rank 3 <= 3)
])
def test_the_panel_says_how_many_more_unsupported_labels_a_finite_tau_needs(alpha, n_uns, more):
    records = [{"label": 0, "score": i / 10} for i in range(n_uns)] + [{"label": 1, "score": 0.95}] * 3
    p = panel(records, alpha, 100)
    if more:
        assert p["warning"].startswith(f"{more} more unsupported labels needed")
        assert p.get("conformal_tau") is None
    else:
        assert p["warning"] == ""
        # the conformal tau: the ceil((n + 1)(1 - alpha))-th smallest unsupported score, which is the largest here
        assert p["conformal_tau"] == pytest.approx((n_uns - 1) / 10)


def test_a_session_refuses_what_it_cannot_record_and_undo_goes_back_one(tmp_path):
    """A judgement outside the three, a note of 2001 characters (2000 is taken), an item after the last; undo
    makes the same item current again and takes one record off the file; a score asked of an unknown item."""
    from citebound.labelling.store import MAX_NOTE_CHARS

    items, _ = population([json.loads(x) for x in answers_file(tmp_path / "a.jsonl", 1).read_text().splitlines()])
    sample = uniform_sample(items, 2, 0)
    sess = LabelSession(sample, LabelStore(tmp_path / "l.jsonl", {**META, "sample_size": 2}), "ann")
    first, second = sample[0].item_id, sample[1].item_id
    with pytest.raises(LabelError, match=r"judgement must be one of \['cant_tell', 'supported', 'unsupported'\], got 'yes'"):
        sess.label(first, "yes")
    with pytest.raises(LabelError, match=f"the note has {MAX_NOTE_CHARS + 1} characters; the limit is {MAX_NOTE_CHARS}"):
        sess.label(first, "supported", "n" * (MAX_NOTE_CHARS + 1))
    lines = lambda: [ln for ln in (tmp_path / "l.jsonl").read_text().splitlines() if ln.strip()] \
        if (tmp_path / "l.jsonl").exists() else []  # noqa: E731
    assert sess.current().item_id == first and lines() == []
    sess.label(first, "supported", "n" * MAX_NOTE_CHARS)
    assert sess.current().item_id == second
    st = sess.undo()
    assert st["item"]["item_id"] == first and st["position"] == 0 and lines() == []
    sess.label(first, "cant_tell")
    sess.label(second, "unsupported")
    with pytest.raises(LabelError, match="every item of the sample is labelled"):
        sess.label(second, "supported")
    assert [json.loads(x)["label"] for x in lines()] == [None, 0]
    assert sess.score(second) == sample[1].score
    with pytest.raises(LabelError, match="no item 'zz' in the sample"):
        sess.score("zz")
