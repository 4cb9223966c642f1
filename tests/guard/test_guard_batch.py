"""POST /v1/guard with a batch, under --action block: each answer's own outcome, the batch's counts over the answers
that were guarded, the audit page (format=html) with a blocked answer withheld and a failed answer named by its id,
id 0 included. Worked by hand (lexical verifier, no re-attribution, max_passages 2):

- id 0: three passages, past max_passages: its own error (index 0), not guarded;
- id 1: "Statins lower LDL cholesterol [1]." against the statin passage: verified, budget 0, passes;
- id 2: "Unicorns sing opera loudly [1].": flagged, budget 1 > 0.3: blocked, its text withheld (null).

Counts over the two guarded answers: 2 citations, 1 verified, 1 flagged, 1 blocked; pooled budget 1/2; 2 answers,
1 failed."""
import re

import httpx
import pytest

pytest.importorskip("fastapi")
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from citebound.text.limits import Limits  # noqa: E402

P = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]
BODY = {"answers": [{"id": 0, "answer": "Statins lower LDL cholesterol [1].", "passages": P + ["x"]},
                    {"id": 1, "answer": "Statins lower LDL cholesterol [1].", "passages": P},
                    {"id": 2, "answer": "Unicorns sing opera loudly [1].", "passages": P}]}


@pytest.fixture(scope="module")
def url():
    with running(ServeConfig(verifier="lexical", action="block", block_above=0.3, reattributor=None,
                             limits=Limits(max_passages=2))) as u:
        yield u


def test_each_answer_has_its_own_outcome_and_the_counts_are_over_the_guarded_ones(url):
    r = httpx.post(f"{url}/v1/guard", json=BODY)
    assert r.status_code == 200, r.text
    failed, ok, blocked = r.json()["results"]
    assert (failed["id"], failed["index"], failed["limit"]) == (0, 0, "max_passages")
    assert ok["guarded_answer"] == "Statins lower LDL cholesterol [1]." and ok["report"]["blocked"] is False
    assert blocked["guarded_answer"] is None and blocked["report"]["blocked"] is True
    c = r.json()["counts"]
    assert (c["answers"], c["failed_answers"], c["blocked"]) == (2, 1, 1)
    assert (c["n_citations"], c["verified"], c["flagged"]) == (2, 1, 1)
    assert c["review_budget"] == pytest.approx(0.5)


def test_the_audit_page_withholds_the_blocked_text_and_names_the_failed_answer_by_its_id_0(url):
    r = httpx.post(f"{url}/v1/guard?format=html", json=BODY)
    assert r.status_code == 200, r.text[-500:]
    assert re.findall(r"<h2>([^<]*)</h2>", r.text) == ["Answer 1", "Answer 2"]
    assert re.findall(r'data-failed="([^"]*)"', r.text) == ["0"]
    (withheld,) = re.findall(r'<em class="withheld">([^<]*)</em>', r.text)
    assert withheld.startswith("withheld: review budget 1 is past --block-above 0.3")


def test_one_blocked_answer_on_the_audit_page_is_withheld_not_a_500(url):
    r = httpx.post(f"{url}/v1/guard?format=html", json=BODY["answers"][2])
    assert r.status_code == 200, r.text[-500:]
    assert '<em class="withheld">withheld: ' in r.text


def test_an_answer_is_named_by_its_id_0_included_and_else_by_its_position_from_1(url):
    answers = [{"id": 0, "answer": "Statins lower LDL cholesterol [1].", "passages": P},
               {"answer": "Mitochondria produce ATP in cells [2].", "passages": P}]
    r = httpx.post(f"{url}/v1/guard?format=html", json={"answers": answers})
    assert re.findall(r"<h2>([^<]*)</h2>", r.text) == ["Answer 0", "Answer 2"]
    # a failed answer without an id is named by its position from 1 as well: the second, past max_passages
    answers[1]["passages"] = P + ["x"]
    r = httpx.post(f"{url}/v1/guard?format=html", json={"answers": answers})
    assert re.findall(r'data-failed="([^"]*)"', r.text) == ["2"]


def test_the_cli_audit_page_withholds_what_its_output_withholds(tmp_path):
    """citebound guard --action block --html: the blocked answer's guarded text is null in the JSONL and withheld on
    the page (the page shows what the output gives), the passing one shown."""
    import json

    from citebound.cli.main import main

    src, out, page = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "audit.html"
    src.write_text("".join(json.dumps(a) + "\n" for a in BODY["answers"][1:]))
    assert main(["guard", "--input", str(src), "--out", str(out), "--verifier", "lexical", "--action", "block",
                 "--block-above", "0.3", "--no-reattribute", "--html", str(page)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["guarded_answer"] for r in rows] == ["Statins lower LDL cholesterol [1].", None]
    html = page.read_text()
    assert re.findall(r"<em class=\"withheld\">([^<]*)</em>", html) == ["withheld: " + rows[1]["report"]["block_reason"]]
    assert "<summary>guarded text</summary><div class=\"text\">Statins lower LDL cholesterol [1].</div>" in html


def test_a_single_answer_block_withholds_is_a_403_with_its_report_and_one_it_passes_a_200(url):
    """The single-answer form (no "answers" list): the unicorn answer (budget 1 > 0.3) is a 403 whose body says why,
    is marked blocked and carries the report (1 citation, flagged), and no guarded text; the statin answer (budget 0)
    is a 200 with its text."""
    r = httpx.post(f"{url}/v1/guard", json={"answer": "Unicorns sing opera loudly [1].", "passages": P})
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["blocked"] is True and body["detail"].startswith("blocked: ") and "guarded_answer" not in body
    assert (body["report"]["n_citations"], body["report"]["flagged"], body["report"]["blocked"]) == (1, 1, True)
    ok = httpx.post(f"{url}/v1/guard", json={"answer": "Statins lower LDL cholesterol [1].", "passages": P})
    assert ok.status_code == 200 and ok.json()["guarded_answer"] == "Statins lower LDL cholesterol [1]."
