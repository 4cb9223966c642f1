"""citebound's LiteLLM guardrail, its hooks driven with LiteLLM's own response and chunk types (in a subprocess:
tests/litellm/drive_hooks.py; importing LiteLLM rewires logging). The expected texts, counts and budgets are the
hand-worked case table's (tests/guard_cases.py), streamed and not; the effects that must happen are observed: the
guarded text is what the client gets, a second choice is refused, a blocked answer's claims are absent, passages
in ``metadata.citebound`` are read, a stream cut short is refused. The real LiteLLM proxy process is exercised by
tests/litellm/run.sh (CI)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from guard_cases import CASES, CONFIGS, write_calibration

ROOT = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("litellm") is None:  # looked up, not imported: LiteLLM is imported by the subprocess only
    pytest.skip("LiteLLM is not installed (the [litellm] or [study] extra)", allow_module_level=True)


def drive(scenarios: list[dict]) -> list[dict]:
    r = subprocess.run([sys.executable, str(ROOT / "tests/litellm/drive_hooks.py")], input=json.dumps(scenarios),
                       capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin",
                            "HOME": str(Path.home())})
    assert r.returncode == 0, r.stderr[-3000:]
    line = next(s for s in r.stdout.splitlines() if s.startswith("RESULTS "))
    return json.loads(line[len("RESULTS "):])


def settings(config: str, cal: Path) -> dict:
    out = {"citebound_verifier": "lexical", "citebound_calibration": str(cal)}
    for k, v in CONFIGS[config].items():  # block_above as YAML or an environment variable may give it: a string
        out[f"citebound_{k}"] = str(v) if k == "block_above" else v
    return out


def words(text: str) -> list[str]:
    """The answer in word pieces as a model streams them."""
    ws = text.split(" ")
    return [w + " " for w in ws[:-1]] + ws[-1:]


REMOVED_FIRST = "Unicorns sing opera loudly [2]. Statins lower LDL cholesterol [1]."
REMOVED_LAST = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2]."


def streamed(text: str, last_with_finish: bool = True) -> list[dict]:
    """Chunks of one choice; the last one carries both text and the finish_reason (LiteLLM passes such a chunk)."""
    pieces = words(text)
    chunks = [{"contents": [p], "finish": None} for p in pieces]
    if last_with_finish:
        chunks[-1]["finish"] = "stop"
    return chunks


def request(c) -> dict:
    return {"citebound": {"passages": c.passages, "citation_base": c.base, "group": c.group}}


def claims_absent(c, body) -> bool:
    """No claim of the answer's sentences (those no passage holds: a passage's own words may come back as
    evidence) appears anywhere in what the client got; the case must have at least one such claim."""
    dumped = json.dumps(body)
    claims = [s.split(" [")[0].strip() for s in c.answer.split(". ") if s.strip()]
    own = [s for s in claims if not any(s in str(p) for p in c.passages)]
    return bool(own) and all(s not in dumped for s in own)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cal = write_calibration(tmp_path_factory.mktemp("litellm-cal"))
    scen = []
    for c in CASES:
        scen.append({"settings": settings(c.config, cal), "data": request(c), "choices": [c.answer]})
        scen.append({"settings": settings(c.config, cal), "data": request(c), "chunks": streamed(c.answer)})
    mixed = next(c for c in CASES if c.name == "mixed")
    base0 = next(c for c in CASES if c.name == "range-base0")
    extra = [
        # passages in metadata.citebound (LiteLLM's own field), at base 0, streamed and not
        {"settings": settings("annotate", cal), "data": {"metadata": {"citebound": request(base0)["citebound"]}},
         "choices": [base0.answer]},
        {"settings": settings("annotate", cal), "data": {"metadata": {"citebound": request(base0)["citebound"]}},
         "chunks": streamed(base0.answer)},
        # two choices: the second would pass unchecked
        {"settings": settings("annotate", cal), "data": request(mixed), "choices": [mixed.answer, "Unicorns fly [1]."]},
        {"settings": settings("annotate", cal), "data": request(mixed),
         "chunks": [{"contents": ["Statins lower LDL cholesterol [1]. ", "Unicorns fly [1]. "], "finish": None},
                    {"contents": ["Done.", "x"], "finish": "stop"}]},
        # no passages anywhere
        {"settings": settings("annotate", cal), "data": {}, "choices": [mixed.answer]},
        # a stream cut short: no finish_reason ever came
        {"settings": settings("annotate", cal), "data": request(mixed), "chunks": streamed(mixed.answer, False)},
        # the whole answer in the finishing chunk, and a finishing chunk with no text after the answer
        {"settings": settings("annotate", cal), "data": request(mixed),
         "chunks": [{"contents": [mixed.answer], "finish": "stop"}]},
        {"settings": settings("annotate", cal), "data": request(mixed),
         "chunks": [{"contents": [mixed.answer], "finish": None}, {"contents": [None], "finish": "stop"}]},
        # remove, streamed: the removed sentence first, then last (its whitespace goes with it, as unstreamed)
        {"settings": settings("remove", cal), "data": request(mixed), "chunks": streamed(REMOVED_FIRST)},
        {"settings": settings("remove", cal), "data": request(mixed), "chunks": streamed(REMOVED_LAST)},
        # a chunk that ends two sentences, the second removed, and the answer goes on: the kept ones joined by the
        # whitespace that followed the removed one, as unstreamed
        {"settings": settings("remove", cal), "data": request(mixed), "chunks": [
            {"contents": ["Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2]. Mito"], "finish": None},
            {"contents": ["chondria produce ATP [2]. Unicorns sing opera loudly [2]."], "finish": "stop"}]},
    ]
    got = drive(scen + extra)
    return {(c.name, kind): got[2 * i + k] for i, c in enumerate(CASES) for k, kind in enumerate(("json", "stream"))} | {
        name: got[2 * len(CASES) + j] for j, name in enumerate(
            ["metadata", "metadata-stream", "two-choices", "two-choices-stream", "no-passages", "cut-short",
             "one-chunk", "finish-alone", "removed-first", "removed-last", "removed-mid-chunk"])}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_unstreamed_is_the_hand_worked_case(results, case):
    r = results[(case.name, "json")]
    if case.text is None:  # blocked: a 403 carrying the report with every claim withheld
        assert r["status"] == 403, r
        report = r["detail"]["citebound"]["report"]
        assert report["blocked"] is True
        assert all(a["claim"] is None for a in report["audit"])
        assert claims_absent(case, r["detail"])
        return
    assert r["status"] == 200, r
    assert r["text"] == [case.text]
    assert {k: int(r["report"][k]) for k in case.expected_counts()} == case.expected_counts()
    assert r["report"]["review_budget"] == pytest.approx(case.budget, abs=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_streamed_joins_to_the_hand_worked_case(results, case):
    r = results[(case.name, "stream")]
    assert r["status"] == 200, r
    if case.text is None:  # blocked on the prefix: what went out before the budget passed, then content_filter
        assert r["finish"] == "content_filter"
        assert r["text"].strip() == case.stream_sent
        assert r["report"]["blocked"] is True
        assert all(a["claim"] is None for a in r["report"]["audit"])
        # the report is of the answer so far, the withheld sentence included (by hand: "block" stops at the
        # unicorn sentence, 1 verified and 1 flagged of 2; "block-uncited" at the first, uncited, sentence)
        so_far = {"block": (2, 1, 1, 0), "block-uncited": (0, 0, 0, 1)}[case.name]
        rep = r["report"]
        assert (rep["n_citations"], rep["verified"], rep["flagged"], rep["uncited"]) == so_far
        return
    assert r["finish"] == "stop"
    assert r["text"] == case.text
    assert {k: int(r["report"][k]) for k in case.expected_counts()} == case.expected_counts()
    assert r["report"]["review_budget"] == pytest.approx(case.budget, abs=1e-12)


def test_passages_in_metadata_are_read_at_base_0(results):
    base0 = next(c for c in CASES if c.name == "range-base0")
    assert results["metadata"]["text"] == [base0.text]
    assert results["metadata-stream"]["text"] == base0.text
    for r in (results["metadata"]["report"], results["metadata-stream"]["report"]):
        assert (r["n_citations"], r["verified"], r["flagged"]) == (3, 1, 2)


def test_a_second_choice_is_refused_never_passed(results):
    assert results["two-choices"]["status"] == 502
    assert "2 choices" in results["two-choices"]["detail"]
    r = results["two-choices-stream"]
    assert r["status"] == 502 and "more than one choice" in r["detail"]
    assert "Unicorns fly" not in r["text"]


def test_no_passages_is_a_400(results):
    assert results["no-passages"]["status"] == 400
    assert "no passages" in results["no-passages"]["detail"]


def test_a_stream_cut_short_is_refused_and_its_held_sentence_not_sent(results):
    r = results["cut-short"]
    assert r["status"] == 502 and "without a finish_reason" in r["detail"]
    # every sentence that ended went out guarded; the last one never ended, so it was not sent
    assert r["text"] == "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2 UNVERIFIED]."
    assert f"{len('Mitochondria produce ATP [1].')} characters of an unfinished sentence" in r["detail"]


def test_the_finishing_chunk_text_is_guarded_and_sent(results):
    from guard_cases import MIXED_GUARDED

    for name in ("one-chunk", "finish-alone"):
        r = results[name]
        assert r["status"] == 200 and r["finish"] == "stop", r
        assert r["text"] == MIXED_GUARDED
        assert (r["report"]["n_citations"], r["report"]["reattributed"], r["report"]["flagged"]) == (3, 1, 1)



def test_remove_streamed_takes_the_removed_sentence_with_its_whitespace(results):
    for name in ("removed-first", "removed-last"):
        r = results[name]
        assert r["status"] == 200, r
        assert r["text"] == "Statins lower LDL cholesterol [1].", name
        assert (r["report"]["n_citations"], r["report"]["removed_sentences"], r["report"]["flagged"]) == (2, 1, 1)
    r = results["removed-mid-chunk"]
    assert r["text"] == "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2]."
    assert (r["report"]["n_citations"], r["report"]["removed_sentences"], r["report"]["verified"]) == (4, 2, 2)
