"""The stream's hold, joiner and report merge at their boundaries, values worked out by hand: how far a text is
stable (a '<' that may still become a tag, at exactly the longest tag and one past it; an element left open before
a later '<'; a trailing surrogate of either half), where a sentence may be cut (never before a '[' or '(' that may
be the previous sentence's marker), a short text never waiting for growth, the held-text limit at its value and
one past, the whitespace between segments, each later segment's sentence indices and marker spans; POST
/v1/score's limits at their value and one past and an unscored pair's null; the torch path's mean pooling."""
import math

import httpx
import pytest

from citebound.guarding.report import CitationAudit, GuardReport
from citebound.guarding.stream import Joiner, SentenceHold, StreamAssembler, commit_point, merge_reports, stable_end
from citebound.text.html_lex import MAX_TAG
from citebound.text.limits import LimitExceeded, Limits


@pytest.mark.parametrize("tail, held", [(MAX_TAG - 1, True), (MAX_TAG, True), (MAX_TAG + 1, False)])
def test_a_trailing_lt_is_held_while_it_may_still_become_a_tag(tail, held):
    """"A works. " (9 characters) then "<!" and letters: ``tail`` characters from the '<' to the end, a bogus
    comment that a later '>' would close (hiding what it holds). Up to MAX_TAG characters it may still be one:
    the stable text ends at 9; past it, it is text: all of it."""
    text = "A works. <!" + "x" * (tail - 2)
    assert len(text) - 9 == tail
    assert stable_end(text) == (9 if held else len(text))


@pytest.mark.parametrize("text, end", [("A works.><!x", 9), ("A works. <!x>y", 14)])
def test_only_a_gt_after_the_last_lt_closes_it(text, end):
    """A '>' just before the last '<' closes nothing of it: "A works.><!x" (a bogus comment a later '>' may close)
    holds back from the '<' (9); "<!x>" closed, then text: nothing held (14 characters)."""
    assert stable_end(text) == end


def test_an_element_left_open_holds_its_text_even_when_a_later_lt_is_open_too():
    text = "A works. <span hidden>secret <b"
    assert (text.index("<span"), text.index("<b")) == (9, 29)
    assert stable_end(text) == 9


def test_only_a_trailing_high_surrogate_is_held():
    assert stable_end("A\ud800") == 1  # its low half may come next
    assert stable_end("A\udc00") == 2  # a low half ends a pair (or is lone): nothing can complete it
    # the high range's last (U+DBFF) and the low range's first and last: held, kept, kept
    assert [stable_end(t) for t in ("A\udbff", "A\udc00", "A\udfff", "\udbff", "A\udbffB")] == [1, 2, 2, 0, 3]


@pytest.mark.parametrize("text, cut", [
    ("Aspirin works. [", 0), ("Aspirin works. (", 0), ("Aspirin works. S", 15), ("Aspirin works. [2] S", 19),
    ("Aspirin works. B works. [2", 15), ("Aspirin works.", 0), ("", 0),
])
def test_a_sentence_is_cut_only_where_no_marker_can_still_join_it(text, cut):
    assert commit_point(text) == cut


def test_a_sentence_completed_by_one_character_is_released_at_once():
    h = SentenceHold()
    assert h.feed("Aspirin helps. ") == ""
    assert h.feed("S") == "Aspirin helps. "
    assert h.finish() == "S"


def test_the_text_held_for_a_sentence_end_is_bounded_at_its_limit():
    h = SentenceHold(Limits(max_stream_held_chars=50))
    assert h.feed("x" * 50) == ""
    with pytest.raises(LimitExceeded, match="held 51 characters"):
        h.feed("y")


def test_the_joiner_keeps_every_whitespace_between_segments_and_ends_as_told():
    j = Joiner()
    assert j.add("A. ") == "A."
    assert j.add("B. ") == " B."
    assert j.add("   ") == ""
    assert j.add("\n ") == ""
    assert j.add("C.\n") == "    \n C."
    assert j.finish(False) == "\n"
    j.add("D. ")
    assert j.finish(True) == ""


def _audit(sentence: int, cited: int, spans, action: str = "verified") -> CitationAudit:
    return CitationAudit(sentence_index=sentence, claim="c", cited=cited, marker=f"[{cited}]", spans=spans, score=1.0,
                         action=action)


def test_a_later_segments_sentences_and_spans_are_shifted_by_everything_before_it():
    """Segment 0 at offset 0: 2 sentences, a citation at sentence 1, span 10-13. Segment 1 at offset 31: 3
    sentences, citations at its sentences 0 and 2 (spans 4-7 and 20-23, 40-43). Segment 2 at offset 90: 1
    sentence, one citation at 0, span 0-3. Whole: sentences 1; 2, 4; 5; spans shifted by 0, 31, 31, 90."""
    p0 = GuardReport(n_sentences=2, n_citations=1, verified=1, audit=[_audit(1, 1, [(10, 13)])])
    p1 = GuardReport(n_sentences=3, n_citations=2, verified=1, flagged=1,
                     audit=[_audit(0, 2, [(4, 7)]), _audit(2, 1, [(20, 23), (40, 43)], "flagged")])
    p2 = GuardReport(n_sentences=1, n_citations=1, verified=1, audit=[_audit(0, 3, [(0, 3)])])
    m = merge_reports([(0, p0), (31, p1), (90, p2)])
    assert [(a.sentence_index, a.spans) for a in m.audit] == [
        (1, [(10, 13)]), (2, [(35, 38)]), (4, [(51, 54), (71, 74)]), (5, [(90, 93)])]
    assert (m.n_sentences, m.n_citations, m.verified, m.flagged) == (6, 4, 3, 1)
    assert m.review_budget == pytest.approx(1 / 4)


def test_a_stream_fails_closed_unless_told_to_fail_open():
    """A stream's report of one segment with two citations, one verified and one unverified (a verifier error,
    not an unreadable marker): closed, the unverified one is to review, 1 of 2; open, it passes, 0 of 2."""
    rep = GuardReport(n_sentences=1, n_citations=2, verified=1, unverified=1,
                      audit=[_audit(0, 1, [(3, 6)]), _audit(0, 2, [(6, 9)], "unverified")])
    for asm, budget in ((StreamAssembler(), 1 / 2), (StreamAssembler(fail_open=True), 0.0)):
        asm.add("One [1][2].", "One [1][2].", rep)
        assert asm.report().review_budget == budget


@pytest.fixture(scope="module")
def score_url():
    pytest.importorskip("fastapi")
    from citebound.serving.state import ServeConfig
    from tests.service_helpers import running

    with running(ServeConfig(verifier="lexical", limits=Limits(max_citations_per_answer=3, max_passage_chars=40))) as url:
        yield url


@pytest.mark.parametrize("n, ok", [(3, True), (4, False)])
def test_score_takes_up_to_max_citations_per_answer_pairs(score_url, n, ok):
    r = httpx.post(f"{score_url}/v1/score", json={"pairs": [{"claim": "zorp", "passage": "zorp"}] * n}, timeout=30)
    assert r.status_code == (200 if ok else 422), r.text
    if ok:
        assert [s["score"] for s in r.json()["scores"]] == [1.0] * 3
    else:
        assert "max_citations_per_answer" in r.text


@pytest.mark.parametrize("chars, ok", [(40, True), (41, False)])
def test_score_takes_a_passage_of_up_to_max_passage_chars(score_url, chars, ok):
    r = httpx.post(f"{score_url}/v1/score", json={"pairs": [{"claim": "zorp", "passage": "zorp " + "q" * (chars - 5)}]},
                   timeout=30)
    assert r.status_code == (200 if ok else 422), r.text
    if not ok:
        assert "pair 0's passage has 41 characters" in r.text


def test_an_unscored_pair_is_null_next_to_a_scored_one(score_url):
    """A pair with no claim cannot be scored: its score is null (not NaN, which is not JSON), its verdict false;
    the other pair of the request keeps its score (1: its one term is in the passage)."""
    r = httpx.post(f"{score_url}/v1/score", json={"pairs": [{"claim": "", "passage": "zorp"},
                                                             {"claim": "zorp", "passage": "zorp"}]}, timeout=30)
    assert r.status_code == 200, r.text
    assert [(s["score"], s["verdict"]) for s in r.json()["scores"]] == [(None, False), (1.0, True)]


def test_mean_pooling_averages_the_kept_tokens_and_normalises_each_row():
    """Row 0 keeps tokens (2, 4) and (4, 4): mean (3, 4), length 5: (0.6, 0.8). Row 1 keeps (0, 2) alone: (0, 1).
    The masked-out tokens (9, 9), (5, 5) count for nothing."""
    torch = pytest.importorskip("torch")
    from citebound.verifiers.embedding import mean_pool

    hidden = torch.tensor([[[2.0, 4.0], [4.0, 4.0], [9.0, 9.0]], [[0.0, 2.0], [5.0, 5.0], [5.0, 5.0]]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    got = mean_pool(hidden, mask).tolist()
    assert got == [pytest.approx([0.6, 0.8]), pytest.approx([0.0, 1.0])]
    assert all(math.isclose(sum(x * x for x in row), 1.0, rel_tol=1e-6) for row in got)
