"""The HTML audit page, checked in its markup and rendered in a real (headless) Chromium."""
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from citebound.cli.main import main

PASSAGES = [
    "In eukaryotic cells, mitochondria produce ATP through oxidative phosphorylation.",
    "Lipid nanoparticles adsorb serum proteins and form a protein corona in blood.",
    "The Eiffel Tower is a wrought-iron tower in Paris.",
]
# with the lexical verifier (threshold 0.6): [1] verified; [3] moves to passage 2; [2] flagged; [7] invalid
ANSWERS = [
    {"id": "q1", "answer": "Mitochondria produce ATP through oxidative phosphorylation [1]. "
                           "Lipid nanoparticles adsorb serum proteins and form a corona [3].",
     "passages": PASSAGES},
    {"id": "q2", "answer": "Quantum gravity remains unsolved [2]. Dark matter halos <b>stay</b> cold [7][7].",
     "passages": PASSAGES},
]
EXPECTED = {("q1", "1"): "verified", ("q1", "3"): "reattributed", ("q2", "2"): "flagged", ("q2", "7"): "invalid"}


class Cites(HTMLParser):
    """Collects every citation chip (answer id, number, outcome) and the page's counts."""

    def __init__(self):
        super().__init__()
        self.answer, self.chips, self.counts, self.budget, self.bold = None, [], {}, None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "data-answer-id" in a:
            self.answer = a["data-answer-id"]
        if tag == "a" and "cite" in (a.get("class") or ""):
            self.chips.append((self.answer, a["data-cited"], a["data-outcome"]))
        if "data-count" in a:
            self.counts[a["data-count"]] = None
            self._count = a["data-count"]
        if "data-review-budget" in a:
            self.budget = float(a["data-review-budget"])
        if tag == "b":
            self.bold += 1

    def handle_data(self, data):
        if getattr(self, "_count", None):
            self.counts[self._count] = int(data.split()[0])
            self._count = None


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("page")
    (d / "in.jsonl").write_text("\n".join(json.dumps(a) for a in ANSWERS) + "\n")
    rc = main(["guard", "--input", str(d / "in.jsonl"), "--verifier", "lexical", "--quiet",
               "--out", str(d / "out.jsonl"), "--html", str(d / "audit.html")])
    assert rc == 0
    return d


def test_page_holds_every_citation_with_its_outcome(page):
    html = (page / "audit.html").read_text()
    p = Cites()
    p.feed(html)
    # [7][7] is one citation shown at both of its places
    assert sorted(p.chips) == sorted([("q1", "1", "verified"), ("q1", "3", "reattributed"),
                                      ("q2", "2", "flagged"), ("q2", "7", "invalid"), ("q2", "7", "invalid")])
    assert p.counts == {"verified": 1, "reattributed": 1, "flagged": 1, "invalid": 1, "unverified": 0, "uncited": 0}
    assert p.budget == pytest.approx(0.5)
    assert "<b>stay</b>" not in html and "&lt;b&gt;stay&lt;/b&gt;" in html  # answer text is escaped
    assert "http://" not in html and "https://" not in html and "<script" not in html  # self-contained
    reports = [json.loads(x)["report"] for x in (page / "out.jsonl").read_text().splitlines()]
    got = {(r_id, str(a["cited"])): a["action"] for r_id, r in zip(("q1", "q2"), reports) for a in r["audit"]}
    assert got == EXPECTED


def test_guarantee_line_on_the_page_with_a_calibration(tmp_path):
    from citebound.scoring.loader import load_scorer
    cal = {"format": "citebound-calibration/1", "alpha": 0.1, "tau": 0.5, "k": 9, "n_unsupported": 9, "verifier": "lexical",
           "verifier_hash": load_scorer("lexical").hash,
           "marginal_guarantee": "a new unsupported citation is flagged with probability >= 0.9"}
    (tmp_path / "cal.json").write_text(json.dumps(cal))
    (tmp_path / "a.json").write_text(json.dumps(ANSWERS[0]))
    rc = main(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "lexical", "--calibration",
               str(tmp_path / "cal.json"), "--out", str(tmp_path / "o.json"), "--html", str(tmp_path / "p.html")])
    html = (tmp_path / "p.html").read_text()
    # 9 unsupported labels and no PAC threshold: only the marginal promise holds, and the page says so
    assert rc == 0 and ("Guarantee: a new unsupported citation is flagged with probability &gt;= 0.9 (marginal only: "
                        "on average over calibration draws") in html and "(alpha=0.1, tau=0.5, marginal" in html
    assert "pass iff score &gt; tau = 0.5" in html


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's chromium for this test")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.slow  # a real browser
def test_page_renders_in_chromium(page, tmp_path):
    from PIL import Image

    cmd = _chromium() + [f"--user-data-dir={tmp_path / 'profile'}"]
    url = (page / "audit.html").as_uri()
    shot = tmp_path / "audit.png"
    r = subprocess.run(cmd + ["--window-size=1200,900", f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=120)
    assert shot.is_file(), r.stderr[-2000:]
    img = Image.open(shot).convert("RGB")
    assert img.size == (1200, 900)
    colours = img.getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # text, chips, borders: not a blank page
    present = {c for _, c in colours}
    # every outcome's chip colour is painted somewhere on the page
    for hexcol in ("#1a7f37", "#0969da", "#bf8700", "#cf222e"):
        rgb = tuple(int(hexcol[i:i + 2], 16) for i in (1, 3, 5))
        assert rgb in present, hexcol
    # the DOM as Chromium built it holds every citation with its outcome
    dom = subprocess.run(cmd + ["--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    p = Cites()
    p.feed(dom)
    assert {(a, c): o for a, c, o in p.chips} == EXPECTED and len(p.chips) == 5


class Sentences(HTMLParser):
    """Each sentence span (answer, sentence index, its classes) with the outcome classes of its chips."""

    def __init__(self):
        super().__init__()
        self.answer, self.sent, self.rows, self.depth = None, None, [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "section" and "data-answer-id" in a:
            self.answer = a["data-answer-id"]
        if tag == "span" and "sent" in cls:
            self.sent = [self.answer, int(a["data-sentence"]), set(cls) - {"sent"}, []]
            self.rows.append(self.sent)
        if tag == "a" and "cite" in cls and self.sent is not None:
            self.sent[3].append((a["data-cited"], set(cls) - {"cite"}))


MIXED = [  # lexical verifier, threshold 0.6, worked out by hand from the passages' terms
    {"id": "m1", "answer": "Mitochondria produce ATP through oxidative phosphorylation [1][3]. "  # verified + flagged
                           "Lipid nanoparticles adsorb serum proteins and form a corona [2][9]. "  # verified + invalid
                           "Mitochondria produce ATP through oxidative phosphorylation [3]. "  # re-attributed alone
                           "The Eiffel Tower is a wrought-iron tower in Paris [3].",  # verified alone
     "passages": PASSAGES},
]


EXPECTED_SENTENCES = {
    ("m1", 0): ({"review"}, [("1", {"verified"}), ("3", {"flagged"})]),
    ("m1", 1): ({"review"}, [("2", {"verified"}), ("9", {"invalid"})]),
    ("m1", 2): (set(), [("3", {"reattributed"})]),
    ("m1", 3): (set(), [("3", {"verified"})]),
    ("q1", 0): (set(), [("1", {"verified"})]),
    ("q1", 1): (set(), [("3", {"reattributed"})]),
    ("q2", 0): ({"review"}, [("2", {"flagged"})]),
    ("q2", 1): ({"review"}, [("7", {"invalid"}), ("7", {"invalid"})]),
}


@pytest.fixture(scope="module")
def mixed_page(tmp_path_factory):
    d = tmp_path_factory.mktemp("mixed")
    (d / "in.jsonl").write_text("\n".join(json.dumps(a) for a in MIXED + ANSWERS) + "\n")
    assert main(["guard", "--input", str(d / "in.jsonl"), "--verifier", "lexical", "--quiet", "--out",
                 str(d / "o.jsonl"), "--html", str(d / "audit.html")]) == 0
    return d / "audit.html"


def _check_sentences(html: str) -> None:
    p = Sentences()
    p.feed(html)
    got = {(a, i): (cls, chips) for a, i, cls, chips in p.rows if chips}
    assert got == EXPECTED_SENTENCES
    # a sentence without citations is never highlighted
    assert all(not cls for a, i, cls, chips in p.rows if not chips)


def test_every_chip_class_and_every_review_highlight_in_the_markup(mixed_page):
    _check_sentences(mixed_page.read_text())


@pytest.mark.slow  # a real browser
def test_every_chip_class_and_every_review_highlight_in_the_browser_dom(mixed_page, tmp_path):
    cmd = _chromium() + [f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(cmd + ["--dump-dom", mixed_page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    _check_sentences(dom)


def big_page(tmp_path, n_answers: int = 50):
    """3 citations per answer: every third answer clean (all verified), the rest with one flagged (no passage has
    the terms of "Quantum gravity remains unsolved")."""
    rows = []
    for k in range(n_answers):
        middle = "Mitochondria produce ATP [1]." if k % 3 == 0 else "Quantum gravity remains unsolved [3]."
        rows.append({"id": f"a{k}", "passages": PASSAGES, "answer":
                     f"Mitochondria produce ATP through oxidative phosphorylation [1]. {middle} "
                     "Lipid nanoparticles adsorb serum proteins [2]."})
    (tmp_path / "big.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["guard", "--input", str(tmp_path / "big.jsonl"), "--verifier", "lexical", "--quiet", "--out",
                 str(tmp_path / "big.out.jsonl"), "--html", str(tmp_path / "big.html")]) == 0
    return tmp_path / "big.html", [json.loads(x)["report"] for x in (tmp_path / "big.out.jsonl").read_text().splitlines()]


def test_a_failed_row_says_why_and_the_page_opens_filtered_in_its_markup(tmp_path):
    html, reports = big_page(tmp_path)
    text = html.read_text()
    assert sum(r["n_citations"] for r in reports) == 150
    needs = [r for r in reports if r["flagged"]]
    assert len(needs) == 33 and sum(r["verified"] for r in reports) == 117  # worked out: 17 clean answers, 33 not
    assert text.count('class="answer needs"') == len(needs) and text.count('class="answer clean"') == 50 - len(needs)
    assert 'id="show-review" checked' in text and f"needs a person ({len(needs)} of 50 answers)" in text
    # each flagged row: its score against the rule, and what re-attribution tried and found
    rule = reports[1]["rule"]
    assert text.count("data-why>") == 33
    assert f"score 0 fails the rule ({rule})".replace(">", "&gt;") in text and "re-attribution tried" in text


@pytest.mark.slow  # a real browser
def test_a_200_citation_page_opens_filtered_in_chromium(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    exe = _chromium()[0]
    html, reports = big_page(tmp_path, 67)  # 67 answers x 3 citations = 201
    n_needs = sum(1 for r in reports if r["flagged"])
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(html.as_uri())
        assert sum(r["n_citations"] for r in reports) >= 200
        visible = page.locator("section.answer:visible")
        assert visible.count() == n_needs  # opened filtered: only the answers that need a person
        assert page.locator("tr.passes:visible").count() == 0 and page.locator("tr.review:visible").count() == n_needs
        page.screenshot(path=str(tmp_path / "filtered.png"), full_page=True)
        filtered_height = page.evaluate("document.body.scrollHeight")
        page.click("label[for=show-all]")
        assert page.locator("section.answer:visible").count() == 67
        assert page.locator("tr.passes:visible").count() == 201 - n_needs
        page.screenshot(path=str(tmp_path / "all.png"), full_page=True)
        assert page.evaluate("document.body.scrollHeight") > filtered_height
        browser.close()


def test_an_answer_whose_only_problem_is_an_uncited_sentence_needs_a_person(tmp_path):
    rows = [{"id": "u", "passages": PASSAGES, "answer": "Mitochondria produce ATP through oxidative phosphorylation [1]. "
                                                      "Nobody checked this sentence."},
            {"id": "c", "passages": PASSAGES, "answer": "Mitochondria produce ATP through oxidative phosphorylation [1]."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["guard", "--input", str(tmp_path / "in.jsonl"), "--verifier", "lexical", "--quiet", "--out",
                 str(tmp_path / "o.jsonl"), "--html", str(tmp_path / "a.html")]) == 0
    html = (tmp_path / "a.html").read_text()
    assert 'class="answer needs" id="answer-0"' in html and 'class="answer clean" id="answer-1"' in html
    assert "needs a person (1 of 2 answers)" in html


@pytest.mark.slow  # a real browser
def test_citations_carried_as_data_render_as_chips_and_rows_in_chromium(tmp_path):
    """A verified char_location quote (passage 2) and an unchecked url_citation, rendered by chromium: one chip each
    where it attaches, visible, with its outcome and kind, and one row each (the verified row once the page shows
    all: it opens filtered to what needs a person, which the url_citation does)."""
    playwright = pytest.importorskip("playwright.sync_api")
    from citebound import Guard
    from citebound.guarding import structured
    from citebound.guarding.audit_page import AuditEntry, render_audit_page

    passages = ["Aspirin irreversibly inhibits platelet cyclooxygenase.", "Statins lower LDL cholesterol in adults."]
    text = "Statins lower LDL cholesterol in adults. Aspirin is old."
    cites = [structured.Attached(40, passages[1], "content[0].citations[0] (char_location)"),
             structured.Attached(56, None, "annotations[0] (url_citation)")]
    guarded, report = structured.guard_with(Guard("lexical"), text, cites, passages)
    (tmp_path / "s.html").write_text(render_audit_page([AuditEntry("a", text, guarded, report.to_dict())]))
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium()[0], args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto((tmp_path / "s.html").as_uri())
        assert page.locator("section.answer:visible").count() == 1
        verified = page.locator('[data-outcome="verified"]:visible')
        unverified = page.locator('[data-outcome="unverified"]:visible')
        assert unverified.count() == 2  # its chip and its row
        assert verified.count() == 1  # its chip; its row passes, and the page opens showing what needs a person
        page.click("label[for=show-all]")
        assert verified.count() == 2 and unverified.count() == 2
        body = page.inner_text("body")
        assert "char_location" in body and "url_citation" in body
        browser.close()
