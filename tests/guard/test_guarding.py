"""The guard library: invalid citations, one citation definition, evidence, stand-alone imports.

Scorers here are tables written by hand (claim, passage) -> score, so every
expected outcome follows from the table, not from the code under test.
"""
import subprocess
import sys

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from citebound.guarding.guard import guard_answer
from citebound.guarding.reattributors import Reattributor, load_reattributor
from citebound.scoring.loader import load_scorer
from citebound.text.citations import extract_pairs

P = ["Mitochondria make ATP in cells.", "Ribosomes build proteins.", "Paris is in France."]


def table_scorer(table, threshold=0.5, passages=P):
    """score = table[(claim, index of the passage in ``passages``)] (0 if absent); verdict = score >= threshold."""
    def scorer(claims, texts):
        s = np.array([table.get((c, passages.index(t)), 0.0) for c, t in zip(claims, texts)], float)
        return s, s >= threshold
    return scorer


def test_out_of_range_citations_are_invalid_marked_and_count_in_the_budget():
    # the example: [0] and [2] with one passage, numbered from 1, point at nothing
    text, rep = guard_answer("Claim [0]. Other claim [2].", P[:1], table_scorer({}), reattribute=None)
    assert text == "Claim [0 INVALID]. Other claim [2 INVALID]."
    assert (rep.n_citations, rep.invalid, rep.verified, rep.flagged) == (2, 2, 0, 0)
    assert rep.review_budget == 1.0
    assert [a.evidence for a in rep.audit] == [None, None]
    assert "points at no passage (have 1, numbered from 1)" in rep.audit[0].reason


def test_invalid_citation_goes_through_reattribution_like_a_failed_one():
    # "Claim." is supported by passage 1 (the only one), so [0] moves there; "Other claim." by nothing
    scorer = table_scorer({("Claim.", 0): 0.9})
    text, rep = guard_answer("Claim [0]. Other claim [2].", P[:1], scorer, reattribute="verifier")
    assert text == "Claim [1 (was 0)]. Other claim [2 INVALID]."
    a, b = rep.audit
    assert (a.action, a.new_pointer, a.new_score) == ("reattributed", 1, 0.9)
    assert a.new_evidence.text == P[0] and "points at no passage" in a.reason
    assert (b.action, rep.reattributed, rep.invalid) == ("invalid", 1, 1)
    assert rep.review_budget == 0.5


def test_remove_drops_invalid_and_flagged_sentences_keeps_the_rest():
    scorer = table_scorer({("Mitochondria make ATP.", 0): 0.9})
    answer = "Mitochondria make ATP [1]. Ribosomes fly [2].\nBad pointer [7]. Last one [3]."
    text, rep = guard_answer(answer, P, scorer, reattribute=None, remove=True)
    assert text == "Mitochondria make ATP [1]."
    assert (rep.verified, rep.flagged, rep.invalid, rep.removed_sentences) == (1, 2, 1, 3)


def test_repeated_citation_is_one_citation_in_guard_and_extraction():
    scorer = table_scorer({("Mitochondria make ATP.", 0): 0.9})
    answer = "Mitochondria make ATP [1][1]."
    text, rep = guard_answer(answer, P, scorer)
    assert text == answer and rep.n_citations == 1 and rep.audit[0].spans == [(22, 25), (25, 28)]
    assert len(extract_pairs(answer, len(P)).pairs) == 1
    # a flagged repeat is marked at both places
    text, rep = guard_answer("Ribosomes fly [2][2].", P, scorer, reattribute=None)
    assert text == "Ribosomes fly [2 UNVERIFIED][2 UNVERIFIED]." and rep.n_citations == 1


@pytest.mark.parametrize("marker,n_passages,expected", [
    ("[1]", 3, 1), ("[1, 2]", 3, 2), ("[1-3]", 3, 3), ("[1\u20133]", 3, 3), ("[3-1]", 3, 2),
    ("[1][1]", 3, 1), ("[1, 1]", 3, 1), ("[[1]](https://a.org/x)", 3, 1), ("[[1]](https://a.org/x) [1]", 3, 1),
    ("[5]", 3, 1), ("[5][5]", 3, 1), ("[2-5]", 3, 4),
])
def test_guard_and_extraction_count_the_same_citations(marker, n_passages, expected):
    answer = f"Some claim {marker}."
    ex = extract_pairs(answer, n_passages)
    _, rep = guard_answer(answer, P[:n_passages], table_scorer({}), reattribute=None)
    assert len(ex.pairs) + len(ex.skips) == expected
    assert rep.n_citations == expected


def test_zero_based_numbering_and_wrong_base_rejected():
    scorer = table_scorer({("Ribosomes build proteins.", 1): 0.9})
    text, rep = guard_answer("Ribosomes build proteins [1]. Nope [3].", P, scorer, base=0, reattribute=None)
    assert text == "Ribosomes build proteins [1]. Nope [3 INVALID]."
    assert rep.verified == 1 and rep.audit[0].evidence.passage == 1
    with pytest.raises(ValueError, match="base must be 0 or 1"):
        guard_answer("x [1].", P, scorer, base=2)


def test_link_markers_keep_their_url_unless_the_pointer_moves():
    url = "(https://example.org/paper)"
    scorer = table_scorer({("Mitochondria make ATP.", 0): 0.9, ("Ribosomes build proteins.", 1): 0.8})
    text, _ = guard_answer(f"Mitochondria make ATP [[1]]{url}.", P, scorer)
    assert text == f"Mitochondria make ATP [[1]]{url}."
    text, _ = guard_answer(f"Ribosomes fly [[2]]{url}.", P, scorer, reattribute=None)
    assert text == f"Ribosomes fly [[2 UNVERIFIED]]{url}."
    # the URL belonged to passage 3; after moving to passage 2 it would lie
    text, rep = guard_answer(f"Ribosomes build proteins [[3]]{url}.", P, scorer, reattribute="verifier")
    assert text == "Ribosomes build proteins [2 (was 3)]." and rep.audit[0].new_pointer == 2


def test_group_marker_rewritten_only_when_something_changed():
    scorer = table_scorer({("X.", 0): 0.9, ("X.", 1): 0.9, ("X.", 2): 0.9})
    assert guard_answer("X [1-3].", P, scorer)[0] == "X [1-3]."
    scorer = table_scorer({("X.", 0): 0.9, ("X.", 2): 0.9})
    assert guard_answer("X [1-3].", P, scorer, reattribute=None)[0] == "X [1, 2 UNVERIFIED, 3]."


def test_threshold_equal_to_score_is_flagged():
    # pass iff score > tau: a score exactly at tau fails
    scorer = table_scorer({("A.", 0): 0.7, ("B.", 1): 0.7000001})
    _, rep = guard_answer("A [1]. B [2].", P, scorer, tau=0.7, reattribute=None)
    assert [a.action for a in rep.audit] == ["flagged", "verified"]


def test_best_accepted_proposal_wins_and_rejected_ones_do_not_move_the_pointer():
    scorer = table_scorer({("C.", 1): 0.6, ("C.", 2): 0.8})
    _, rep = guard_answer("C [1].", P, scorer, reattribute="verifier")
    assert (rep.audit[0].new_pointer, rep.audit[0].new_score) == (3, 0.8)
    scorer = table_scorer({("C.", 1): 0.4, ("C.", 2): 0.45})  # nothing passes 0.5
    text, rep = guard_answer("C [1].", P, scorer, reattribute="verifier")
    assert text == "C [1 UNVERIFIED]." and rep.audit[0].new_pointer is None


def test_evidence_is_the_best_window_of_the_passage():
    # 1,000 characters: windows (0, 600), (300, 900), (400, 1000) at 600/300; the supporting
    # sentence sits at 920..968, so only the last window holds it
    filler = "Unrelated words about geology and rivers. "
    passage = (filler * 22)[:919] + " Mitochondria produce ATP by oxidative phosphorylation."
    passage = passage + " " * (1000 - len(passage))
    assert len(passage) == 1000 and passage.index("Mitochondria") == 920
    scorer = load_scorer("lexical")
    _, rep = guard_answer("Mitochondria produce ATP by oxidative phosphorylation [1].", [passage], scorer)
    ev = rep.audit[0].evidence
    assert (ev.passage, ev.start, ev.end) == (1, 400, 1000)
    assert ev.text == passage[400:1000] and ev.score == rep.audit[0].score == 1.0


def test_bm25_proposals_best_first_with_config_k1_b():
    # equal-length documents (3 content terms each), so BM25 orders by the idf sum of shared terms:
    # doc 0 shares alpha+beta+gamma, doc 1 alpha+beta, doc 2 alpha, the rest nothing
    docs = ["alpha beta gamma", "alpha beta zeta", "alpha eta theta", "iota kappa lambda",
            "omicron sigma tau", "upsilon chi omega", "delta epsilon mu", "nu xi rho"]
    r = Reattributor("bm25", "bm25", k1=1.5, b=0.75, proposals=3)
    assert r.propose("alpha beta gamma", docs, exclude=set()) == [0, 1, 2]
    assert r.propose("alpha beta gamma", docs, exclude={0}) == [1, 2, 3]
    # the scores are rank-bm25's own, computed here independently
    ref = BM25Okapi([sorted(d.split()) for d in docs], k1=1.5, b=0.75).get_scores(["alpha", "beta", "gamma"])
    assert list(np.argsort(-ref, kind="stable")[:3]) == [0, 1, 2]


def test_reattributor_reads_k1_b_from_its_definition(tmp_path, monkeypatch):
    from citebound import definitions

    r = load_reattributor("bm25", proposals=5)
    assert (r.kind, r.k1, r.b, r.proposals) == ("bm25", 1.5, 0.75, 5)
    (tmp_path / "reattributor").mkdir()
    (tmp_path / "reattributor" / "bm25.yaml").write_text("name: bm25\nkind: bm25\nk1: 0.4\nb: 0.1\n")
    monkeypatch.setattr(definitions, "ROOT", tmp_path)
    r = load_reattributor("bm25")
    assert (r.k1, r.b) == (0.4, 0.1)
    with pytest.raises(ValueError, match="unknown re-attributor 'nope'"):
        load_reattributor("nope")


def test_guard_imports_no_study_code():
    code = ("import sys, citebound.guarding.guard as g, citebound.scoring.loader as s\n"
            "sc = s.load_scorer('lexical')\n"
            "g.guard_answer('Mitochondria make ATP [2].', ['Mitochondria make ATP.', 'Other.'], sc)\n"
            "bad = [m for m in ('citebound.study.analysis', 'statsmodels', 'citebound.calibration.stats') if m in sys.modules]\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_full_report_by_hand():
    # 4 sentences, 3 cited; [1] supported, [2] fails and moves to passage 3, [9] points at nothing
    scorer = table_scorer({("A.", 0): 0.9, ("B.", 1): 0.2, ("B.", 2): 0.7, ("B.", 0): 0.1})
    text, rep = guard_answer("A [1]. B [2]. No cite here. C [9].", P, scorer, reattribute="verifier",
                             guarantee="catches >= 90%")
    assert text == "A [1]. B [3 (was 2)]. No cite here. C [9 INVALID]."
    plain, _ = guard_answer("A [1]. B [2]. No cite here. C [9].", P, scorer, reattribute="verifier",
                            mark_reattributed=False)
    assert plain == "A [1]. B [3]. No cite here. C [9 INVALID]."
    assert (rep.n_sentences, rep.n_cited_sentences, rep.n_citations) == (4, 3, 3)
    assert (rep.verified, rep.reattributed, rep.flagged, rep.invalid) == (1, 1, 0, 1)
    # "No cite here." cites nothing: by default (uncited flag) it counts, (1 invalid + 1 uncited) / (3 + 1)
    assert (rep.uncited, rep.uncited_sentences, rep.review_budget) == (1, [[14, 27]], 0.5)
    _, ignored = guard_answer("A [1]. B [2]. No cite here. C [9].", P, scorer, reattribute="verifier", uncited="ignore")
    assert (ignored.uncited, ignored.review_budget) == (1, pytest.approx(1 / 3))
    assert rep.guarantee == "catches >= 90%" and rep.rule == "pass iff verifier verdict"
    a, b, c = rep.audit
    assert (a.sentence_index, a.claim, a.cited, a.marker, a.score, a.reason) == (0, "A.", 1, "[1]", 0.9, "")
    assert (b.cited, b.marker, b.score, b.new_pointer, b.new_score, b.reason) == (2, "[2]", 0.2, 3, 0.7, "")
    assert (c.cited, c.marker, c.score, c.new_pointer) == (9, "[9]", None, None)
    assert c.reason == "citation [9] points at no passage (have 3, numbered from 1)"
    assert a.evidence.text == P[0] and (a.evidence.start, a.evidence.end) == (0, len(P[0]))
    assert b.new_evidence.passage == 3 and b.new_evidence.text == P[2]
    _, rep = guard_answer("A [1].", P, scorer, tau=0.123456789)
    assert rep.rule == "pass iff score > tau = 0.123457"
    _, rep = guard_answer("Nothing cited.", P, scorer)
    # an answer that cites nothing was checked against nothing: its one sentence is the whole review budget
    assert (rep.n_citations, rep.review_budget, rep.n_sentences, rep.n_cited_sentences, rep.uncited) == (0, 1.0, 1, 0, 1)


def test_reattribution_uses_tau_too_and_ties_keep_the_first_proposal():
    # with tau = 0.65 a proposal must score above 0.65: passage 2's 0.6 would pass its own verdict
    # (>= 0.5) but not tau; passage 3's 0.7 passes
    scorer = table_scorer({("C.", 1): 0.6, ("C.", 2): 0.7})
    _, rep = guard_answer("C [1].", P, scorer, tau=0.65, reattribute="verifier")
    assert rep.audit[0].new_pointer == 3
    scorer = table_scorer({("C.", 1): 0.6})
    text, rep = guard_answer("C [1].", P, scorer, tau=0.65, reattribute="verifier")
    assert text == "C [1 UNVERIFIED]."
    # equal scores: the re-attributor's first proposal (passage 2, in passage order for 'verifier') wins
    scorer = table_scorer({("C.", 1): 0.8, ("C.", 2): 0.8})
    assert guard_answer("C [1].", P, scorer, reattribute="verifier")[1].audit[0].new_pointer == 2


def test_default_reattribution_is_bm25_with_three_proposals():
    passages = [f"filler {i} words" for i in range(5)] + ["cells make atp in mitochondria"]
    scorer_calls = []

    def scorer(claims, ps):
        scorer_calls.append(list(ps))
        s = np.array([0.9 if "atp" in p else 0.0 for p in ps])
        return s, s >= 0.5
    text, rep = guard_answer("Cells make atp [1].", passages, scorer)
    assert text == "Cells make atp [6 (was 1)]."
    assert len(scorer_calls[1]) == 3 and scorer_calls[1][0] == passages[5]  # BM25's best first


def test_non_string_answer_message():
    with pytest.raises(Exception, match="^'answer' must be a string$"):
        guard_answer(["x"], P, table_scorer({}))


def test_remove_takes_the_whitespace_around_a_dropped_sentence():
    scorer = table_scorer({("Good.", 0): 0.9, ("Also good.", 0): 0.9})
    # a dropped sentence in the middle takes the spaces after it
    assert guard_answer("Good [1].  Bad [2].  Also good [1].", P, scorer, reattribute=None,
                        remove=True)[0] == "Good [1].  Also good [1]."
    # a dropped last sentence takes the spaces before it
    assert guard_answer("Good [1].   Bad [2].", P, scorer, reattribute=None, remove=True)[0] == "Good [1]."
    # a dropped first sentence at the very start
    assert guard_answer("Bad [2]. Good [1].", P, scorer, reattribute=None, remove=True)[0] == "Good [1]."
    # nothing dropped: the text keeps its trailing whitespace
    assert guard_answer("Good [1].  ", P, scorer, reattribute=None, remove=True)[0] == "Good [1].  "


def test_evidence_window_uses_the_configured_stride_and_the_first_window():
    from citebound.scoring.loader import load_scorer
    passage = "Mitochondria produce ATP. " + "x " * 600
    scorer = load_scorer("lexical")
    scorer.windowing = {**scorer.windowing, "window_chars": 100, "stride": 40}
    _, rep = guard_answer("Mitochondria produce ATP [1].", [passage], scorer)
    ev = rep.audit[0].evidence
    assert (ev.start, ev.end) == (0, 100)  # the best window is the first one
    passage2 = "x " * 60 + "Mitochondria produce ATP. " + "x " * 600
    _, rep = guard_answer("Mitochondria produce ATP [1].", [passage2], scorer)
    ev = rep.audit[0].evidence
    # windows start at 0, 40, 80, 120 ...: the claim at 120..145 lies whole first in the window at 80
    assert (ev.start, ev.end) == (80, 180)


@pytest.mark.parametrize("text,citations,answer,n_passages", [
    # numeric formats a section can use, with its own citation list of 3 (ids 1..3)
    ("A [1]. B [1, 2]. C [1-3]. D [1\u20133]. E [3-1]. F [1][1]. G [[2]](http://x.org/a). H [7].",
     [{"id": str(i), "snippets": [f"s{i}"]} for i in (1, 2, 3)],
     "A [1]. B [1, 2]. C [1, 2, 3]. D [1, 2, 3]. E [3, 1]. F [1][1]. G [2]. H [7].", 3),
    # one source named twice in a marker is cited once, in the order first named
    ("A [1, 1]. B [2, 1, 2]. H [7].", [{"id": str(i), "snippets": [f"s{i}"]} for i in (1, 2)],
     "A [1]. B [2, 1]. H [7].", 2),
    # author-year and bracketed string ids
    ("X (Rego et al., 2022). Y [77 | Doe | 2020 | Citations: 0]. Z (Nobody et al., 2001).",
     [{"id": "(Rego et al., 2022)", "snippets": ["r"]}, {"id": "[77 | Doe | 2020 | Citations: 0]", "snippets": ["d"]}],
     "X [1]. Y [2]. Z (Nobody et al., 2001).", 2),
])
def test_convert_rewrites_every_format_and_the_guard_counts_what_extraction_counts(tmp_path, text, citations, answer,
                                                                                   n_passages):
    import json

    from citebound.guarding.convert import convert_records
    p = tmp_path / "r.json"
    p.write_text(json.dumps([{"question": "q", "response": {"sections": [{"text": text, "citations": citations}]}}]))
    (rec,) = convert_records(p, "sections")
    assert rec["answer"] == answer and rec["citation_base"] == 1 and len(rec["passages"]) == n_passages
    assert rec["unresolved_markers"] == 1  # [7] / (Nobody et al., 2001): in no citation list, left as written
    # the converted answer, 1-based: extraction and the guard see the same citations
    ex = extract_pairs(rec["answer"], n_passages, base=1)
    def zero(claims, passages):
        return np.zeros(len(claims)), np.zeros(len(claims), bool)
    _, rep = guard_answer(rec["answer"], [q["text"] for q in rec["passages"]], zero, reattribute=None)
    assert rep.n_citations == len(ex.pairs) + len(ex.skips)
    assert rep.invalid == sum(s.reason == "out_of_range" for s in ex.skips)
