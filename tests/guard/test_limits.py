"""Bounded input: every expansion and size a guard input controls has a limit, refused quickly and by
name; the citation parser survives random and hostile text (hypothesis)."""
import json
import re
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from citebound.guarding.guard import Guard, guard_answer
from citebound.text.citations import expand_numeric, sentence_citations, sentences
from citebound.text.limits import LimitExceeded, Limits

HOSTILE = {"answer": "Aspirin lowers fever [1-1000000000].", "passages": ["Aspirin lowers fever in adults."]}


def lexical(claims, passages):
    import numpy as np
    return np.ones(len(claims)), np.ones(len(claims), bool)


def test_the_billion_citation_range_is_refused_in_well_under_a_second_without_memory_growth(tmp_path):
    src = tmp_path / "a.json"
    src.write_text(json.dumps(HOSTILE))
    # warm up first (imports, one small answer), so what is measured is the refusal alone
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"answer": "Fever falls [1].", "passages": ["Fever falls."]}))
    code = ("import resource, sys, time\nfrom citebound.cli.main import main\n"
            f"main(['guard', '--input', {str(small)!r}, '--verifier', 'lexical'])\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\nt = time.perf_counter()\n"
            f"rc = main(['guard', '--input', {str(src)!r}, '--verifier', 'lexical'])\n"
            "dt = time.perf_counter() - t\ngrow = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
            "print(rc, dt, grow)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    rc, dt, grow_kb = out.stdout.split()[-3:]
    assert rc == "2"
    assert "citation range [1-1000000000] expands to 1000000000 citations; the limit is 1000 (max_range)" in out.stderr
    assert float(dt) < 0.25  # measured ~1 ms; a billion-element expansion takes minutes
    assert int(grow_kb) < 10_000  # ru_maxrss is in KB: under 10 MB of growth (expanding would need GBs)


@pytest.mark.parametrize("max_range,budget,refused", [
    (None, None, False), (1000, None, True), (None, 5, True), (1000, 5, True)])
def test_a_number_past_18_digits_is_refused_under_either_bound(max_range, budget, refused):
    """Either bound refuses a 19-digit number (the 18-digit one passes); with no bound it is a number."""
    assert expand_numeric("9" * 18, max_range, budget) == [10 ** 18 - 1]
    if not refused:
        assert expand_numeric("9" * 19) == [10 ** 19 - 1]
        return
    for body in ("9" * 19, "1-" + "9" * 19, "9" * 19 + "-1"):  # either end of a range past 18 digits too
        with pytest.raises(LimitExceeded, match="has more than 18 digits") as e:
            expand_numeric(body, max_range, budget)
        assert (e.value.limit, e.value.value) == ("max_range", 1000 if max_range else 0)


def test_a_range_at_the_limit_passes_and_one_past_it_is_refused():
    lim = Limits(max_range=5)
    assert expand_numeric("1-5", max_range=5) == [1, 2, 3, 4, 5]
    with pytest.raises(LimitExceeded, match=r"\[1-6\] expands to 6 citations; the limit is 5 \(max_range\)"):
        expand_numeric("1-6", max_range=5)
    passages = [f"passage {i}" for i in range(6)]
    _, report = guard_answer("Claim [1-5].", passages, lexical, reattribute=None, limits=lim)
    assert report.n_citations == 5
    with pytest.raises(LimitExceeded, match="max_range"):
        guard_answer("Claim [1-6].", passages, lexical, reattribute=None, limits=lim)


@pytest.mark.parametrize("limits,answer,n_passages,name", [
    (Limits(max_citations_per_sentence=3), "A [1][2][3]. B [1, 2, 3, 4].", 4, "max_citations_per_sentence"),
    (Limits(max_citations_per_answer=5), "A [1][2][3]. B [1][2][3].", 3, "max_citations_per_answer"),
    (Limits(max_sentences=2), "A [1]. B [1]. C [1].", 1, "max_sentences"),
    (Limits(max_passages=2), "A [1].", 3, "max_passages"),
    (Limits(max_passage_chars=10), "A [1].", 1, "max_passage_chars"),
    (Limits(max_answer_chars=10), "A long answer [1].", 1, "max_answer_chars"),
])
def test_each_limit_is_enforced_and_named(limits, answer, n_passages, name):
    passages = [f"passage number {i} text" for i in range(n_passages)]
    with pytest.raises(LimitExceeded) as e:
        guard_answer(answer, passages, lexical, reattribute=None, limits=limits)
    assert e.value.limit == name and f"({name})" in str(e.value)
    # one below each limit passes: the boundary is inclusive
    relaxed = Limits(**{name: getattr(limits, name) + 100})
    guard_answer(answer, passages, lexical, reattribute=None, limits=relaxed)


def test_limits_at_exactly_the_count_pass():
    # 3 citations in a sentence with max 3, 6 in the answer with max 6, 2 sentences with max 2
    lim = Limits(max_citations_per_sentence=3, max_citations_per_answer=6, max_sentences=2, max_passages=3)
    _, r = guard_answer("A [1][2][3]. B [1][2][3].", ["a b", "c d", "e f"], lexical, reattribute=None, limits=lim)
    assert r.n_citations == 6


def test_bad_limit_settings_are_refused(capsys):
    with pytest.raises(ValueError, match="unknown limit"):
        Limits.from_mapping({"max_rnage": 3})
    with pytest.raises(ValueError, match="positive integer"):
        Limits(max_range=0)
    from citebound.cli.main import main
    assert main(["guard", "--input", "-", "--verifier", "lexical", "--limit", "max_range=x"]) == 2
    assert "--limit expects NAME=INTEGER" in capsys.readouterr().err


@pytest.mark.parametrize("value", [True, 2.7, "5", None])
def test_a_limit_from_a_mapping_must_already_be_an_integer(value):
    """A library caller's {"max_range": True} was 1 and 2.7 was 2, silently: each is refused naming the limit."""
    with pytest.raises(ValueError, match=r"limit max_range must be a positive integer, got " + re.escape(repr(value))):
        Limits.from_mapping({"max_range": value})
    assert Limits.from_mapping({"max_range": 5}).max_range == 5 and Limits.from_mapping(None) == Limits()


def test_cli_limit_flag_and_batch_reports_the_refused_line(tmp_path, capsys):
    from citebound.cli.main import main
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"answer": "Fever falls [1-3].", "passages": ["Fever falls.", "x y", "z w"]}) + "\n"
                   + json.dumps({"answer": "Bad [1-50].", "passages": ["a"]}) + "\n")
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--quiet", "--limit", "max_range=10",
                 "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{src}:2: citation range [1-50] expands to 50 citations; the limit is 10 (max_range)" in err
    assert '"answers": 1, "failed_answers": 1' in err
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 1
    # raised past 50, the same line is guarded
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--quiet", "--limit", "max_range=50",
                 "--out", str(tmp_path / "o2.jsonl")]) == 0


def test_guard_object_carries_its_limits():
    g = Guard(lexical, reattributor=None, limits=Limits(max_range=2))
    with pytest.raises(LimitExceeded):
        g.guard("X [1-3].", ["a", "b", "c"])


MARKERISH = st.sampled_from(["[", "]", "[[", "]]", "(", ")", "-", "\u2013", ",", " ", ".", "\n", "|", "2020", "0",
                             "-5", "99999999999999999999", "1-1000000000", "[1]", "[2-1]", "[[1]](http://x)", "et al."])
TEXT = st.lists(st.one_of(MARKERISH, st.text(max_size=5), st.integers(-10**12, 10**12).map(str)), max_size=60).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, n_passages=st.integers(0, 5), base=st.sampled_from([0, 1]))
def test_citation_parser_on_random_and_malformed_text(text, n_passages, base):
    """Never crashes, never expands past the limit, every index is a real passage or -1, and spans
    lie inside the sentence they belong to."""
    lim = Limits(max_range=50)
    t0 = time.perf_counter()
    for s in sentences(text):
        try:
            cs = sentence_citations(text, s, n_passages, base=base, max_range=lim.max_range)
        except LimitExceeded as e:
            assert e.limit == "max_range"
            continue
        for c in cs:
            assert c.passage_index == -1 or 0 <= c.passage_index < n_passages
            assert c.passage_index == -1 or c.passage_index == int(c.key) - base
            assert s.start <= c.start < c.end <= s.end
    assert time.perf_counter() - t0 < 2.0


@settings(max_examples=150, deadline=None)
@given(answer=TEXT, passages=st.lists(st.text(min_size=1, max_size=30).filter(str.strip), min_size=1, max_size=4))
@example(answer="[1]", passages=["<A"])  # a passage a reader sees nothing of (an unfinished tag), found by a run
def test_guard_on_random_answers_keeps_its_invariants(answer, passages):
    try:
        text, r = guard_answer(answer, passages, lexical, reattribute=None, limits=Limits(max_range=50))
    except LimitExceeded:
        return
    assert r.verified + r.reattributed + r.flagged + r.invalid + r.unverified == r.n_citations == len(r.audit)
    total = r.n_citations + r.uncited
    assert r.review_budget == ((r.flagged + r.invalid + r.unverified + r.uncited) / total if total else 0.0)
    # the scorer accepts everything: a citation is verified iff it points at a passage (1..n, base 1); a
    # citation form the guard cannot read (cited -1: a bracket, a superscript, ...) is unverified, never dropped,
    # and so is a citation of a sentence holding text a reader may not see, or of a passage a reader sees nothing of
    for a in r.audit:
        if a.cited == -1:
            assert a.action == "unverified" and a.unreadable and a.marker.strip()
        elif a.unreadable:
            assert a.action == "unverified"
            assert "may not see" in a.reason or f"passage [{a.cited}] has no text a reader can see" in a.reason
        else:
            assert a.action == ("verified" if 1 <= a.cited <= len(passages) else "invalid")


def test_the_units_an_answer_makes_are_bounded_at_the_limit_and_one_past_it():
    """#52 item 3: memory grows with (claim, window) units; an answer at the limit is guarded, one unit more is
    refused before anything is scored. Windows counted by hand at 600/300: a 1,500-character passage has
    windows at 0, 300, 600 and 900 (the last ends at 1,500): 4."""
    import numpy as np

    from citebound.guarding.core import n_windows
    from citebound.guarding.guard import guard_answer
    from citebound.text.limits import LimitExceeded, Limits

    # the last window starts at the first multiple of 300 whose window reaches the end: 1,000,000 - 600 = 999,400
    # -> 300 * 3332 = 999,600, so starts 0 .. 3332: 3333 windows
    assert n_windows(1500) == 4 and n_windows(1) == 1 and n_windows(1_000_000) == 3333
    from citebound.verifiers.base import window_spans

    assert all(n_windows(n) == len(window_spans(n, 600, 300)) for n in [0, 1, 599, 600, 601, 899, 900, 901, 1200])
    passages = ["a " * 750, "b " * 100]  # 4 windows and 1 window
    answer = "A holds [1]. B holds [2]. C holds [1][2]."  # 4 + 1 + 4 + 1 = 10 units

    def anything(claims, windows):
        return np.ones(len(claims)), np.ones(len(claims), bool)
    _, r = guard_answer(answer, passages, anything, reattribute=None, limits=Limits(max_units_per_answer=10))
    assert r.verified == 4
    with pytest.raises(LimitExceeded, match="10 .claim, passage window. units.*max_units_per_answer"):
        guard_answer(answer, passages, anything, reattribute=None, limits=Limits(max_units_per_answer=9))


def test_a_stream_may_hold_exactly_max_stream_held_chars():
    """50 characters with no sentence end are held (the limit is 50); the 51st cuts the stream, naming the limit."""
    from citebound.guarding.stream import SentenceHold

    hold = SentenceHold(Limits(max_stream_held_chars=50))
    assert hold.feed("x" * 50) == "" and len(hold.held) == 50
    with pytest.raises(LimitExceeded, match="held 51 characters without a complete sentence.*max_stream_held_chars"):
        hold.feed("x")
