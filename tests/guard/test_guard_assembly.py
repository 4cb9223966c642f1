"""The guard as one assembled object (:class:`citebound.Guard`): a group's own guarantee, block's boundary and
reason, the base a call gives, streaming under remove, the shipped calibration's verifier check, and the card's
monitor (its store key, unobserved scores, reset history, which alarm). Expected values are worked by hand from a
fixed scorer: a claim scores 0.9 when the cited passage holds its first word, else 0.1."""
import numpy as np
import pytest
from calibration_helpers import calibrate

from citebound import Guard
from citebound.calibrations import shipped
from citebound.guarding.guard import GuardInputError

P = ["Statins lower LDL cholesterol.", "Mitochondria make ATP.", "Aspirin thins blood."]


def first_word(claims, passages):
    """0.9 iff the passage holds the claim's first word (lower case), else 0.1."""
    s = np.array([0.9 if c.split()[0].lower() in p.lower() else 0.1 for c, p in zip(claims, passages)])
    return s, s > 0.5


def guard(**kw):
    return Guard(first_word, reattributor=None, threshold=0.5, **kw)


# --- a group's own calibration -------------------------------------------------------------------------------

@pytest.fixture
def grouped(tmp_path, capsys):
    """Group 'big' has 22 unsupported scores 0.01..0.22 (its PAC tau: the 22nd, 0.22); the pooled calibration adds
    21 at 0.31..0.51 (43 in all: PAC rank 42, tau 0.50), as in tests/guard/test_groups.py's hand computation."""
    recs = [{"score": round(0.01 * i, 2), "label": 0, "group": "big"} for i in range(1, 23)]
    recs += [{"score": round(0.30 + 0.01 * i, 2), "label": 0, "group": "small"} for i in range(1, 22)]
    recs += [{"score": 0.95, "label": 1, "group": g} for g in ("big", "small", "big")]
    out = calibrate(tmp_path, recs, "--verifier-id", "fixed")
    capsys.readouterr()
    return out


def test_a_groups_report_carries_its_own_guarantee_line(grouped):
    g = Guard(lambda c, p: (np.full(len(c), 0.3), np.ones(len(c), bool)), calibration=str(grouped),
              reattributor=None)
    _, pooled = g.guard("Cells make ATP [1].", ["Cells make ATP."])
    _, big = g.guard("Cells make ATP [1].", ["Cells make ATP."], group="big")
    _, small = g.guard("Cells make ATP [1].", ["Cells make ATP."], group="small")
    assert (pooled.flagged, big.verified, small.flagged) == (1, 1, 1)  # 0.3 is above 0.22, below 0.50
    assert "tau=0.22," in big.guarantee and "n_unsupported=22)" in big.guarantee
    assert "tau=0.5," in pooled.guarantee and "n_unsupported=43)" in pooled.guarantee
    assert small.guarantee == pooled.guarantee  # a fallback group is guarded, and promised, as the pool


# --- block ------------------------------------------------------------------------------------------------------

# four citations: [1] and [2] supported, [3] unsupported (flagged), [9] points at no passage (invalid)
BLOCKED = "Statins lower LDL [1]. Mitochondria make ATP [2]. Statins cure colds [3]. Aspirin helps [9]."


@pytest.mark.parametrize("above,withheld", [(0.5, False), (np.nextafter(0.5, 0), True), (0.49, True)])
def test_block_withholds_only_past_block_above_not_at_it(above, withheld):
    """Review budget (1 flagged + 1 invalid) / 4 citations = 0.5 exactly: at --block-above 0.5 the answer goes out."""
    text, r = guard(action="block", block_above=above).guard(BLOCKED, P)
    assert r.review_budget == 0.5 and (r.flagged, r.invalid, r.n_citations) == (1, 1, 4)
    assert r.blocked is withheld and (text == "") is withheld
    if withheld:
        assert "2 of 4 citations failed or could not be checked" in r.block_reason


def test_block_above_must_lie_in_zero_to_one_and_remove_agrees_with_action():
    for bad in (1, 1.0, -0.1, True, None):
        with pytest.raises(GuardInputError, match=r"block_above in \[0, 1\)"):
            guard(action="block", block_above=bad)
    assert guard(action="block", block_above=0).block_above == 0.0
    with pytest.raises(GuardInputError, match="contradicts"):
        guard(remove=True, action="annotate")


# --- the base a call gives ---------------------------------------------------------------------------------------

def test_guard_many_uses_the_calls_base_and_an_items_own_over_it():
    def read(r):
        return [(x.cited, x.action, x.evidence.text.split()[0] if x.evidence else None) for x in r.audit]

    g = guard(base=1)
    items = [("Statins lower LDL [0]. Aspirin thins blood [2].", P), ("Mitochondria make ATP [2].", P, 1)]
    (_, a), (_, b) = g.guard_many(items, base=0)
    # base 0: [0] is 'Statins...' (supported), [2] is 'Aspirin...' (supported); the second item keeps its base 1
    assert read(a) == [(0, "verified", "Statins"), (2, "verified", "Aspirin")]
    assert read(b) == [(2, "verified", "Mitochondria")]
    (_, c), = g.guard_many(items[:1])  # the guard's base, 1: [0] points at nothing, [2] at 'Mitochondria...'
    assert read(c) == [(0, "invalid", None), (2, "flagged", "Mitochondria")]


# --- streaming under remove ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_a_stream_under_remove_joins_to_the_whole_answers_text(step):
    """The flagged sentences (the second and the last but one) are removed with the whitespace after them, in a
    stream as in the whole answer, whatever the pieces."""
    answer = ("Statins lower LDL [1].  Statins cure colds [3].\nMitochondria make ATP [2]. "
              "Aspirin cures gout [1]. Aspirin thins blood [3].  ")
    g = guard(action="remove")
    whole, rep = g.guard(answer, P)
    assert whole == "Statins lower LDL [1].  Mitochondria make ATP [2]. Aspirin thins blood [3]."
    assert rep.removed_sentences == 2
    out = list(g.stream([answer[i:i + step] for i in range(0, len(answer), step)], P))
    assert "".join(out[:-1]) == whole
    assert (out[-1].removed_sentences, out[-1].flagged, out[-1].verified) == (2, 2, 3)


# --- the shipped calibration -----------------------------------------------------------------------------------------

def test_the_shipped_calibration_applies_only_to_the_verifier_it_was_made_for():
    cal = shipped("lexical")
    g = Guard("lexical")
    assert g.calibration == cal and g.tau == cal["pac"]["tau"] and g.scorer.hash == cal["verifier_hash"]
    other = Guard("lexical", overrides={"k1": 1.5})  # a key that enters the verifier's hash
    assert other.scorer.hash != cal["verifier_hash"]
    assert other.calibration is None and other.tau is None and other.rule == "pass iff verifier verdict"
    assert other.guarantee == ""


# --- the card's monitor ----------------------------------------------------------------------------------------------

EXAMPLE = ("Statins lower LDL cholesterol [1]. Mitochondria make ATP [2].",
           ["Statins lower LDL cholesterol in adults.", "Mitochondria make ATP in cells."])


@pytest.fixture
def own_calibration(tmp_path):
    """A lexical calibration other than the shipped one (another hash)."""
    recs = [{"score": round(0.002 * i, 3), "label": 0} for i in range(1, 201)]
    recs += [{"score": round(0.5 + 0.002 * i, 3), "label": 1} for i in range(1, 101)]
    return calibrate(tmp_path, recs)


def test_two_calibrations_sharing_a_store_keep_their_own_monitors(tmp_path, own_calibration):
    """A new calibration deployed on the same store starts with its own monitor, not the old one's void."""
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    old, new = Guard("lexical", state=url), Guard("lexical", calibration=str(own_calibration), state=url)
    assert old.keeper.hash != new.keeper.hash
    assert old.keeper.labels(9, 10) == "void"
    assert (old.keeper.state, new.keeper.state) == ("void", "ok")
    _, r = new.guard(*EXAMPLE)
    assert r.guarantee_card["monitor"]["state"] == "ok" and r.guarantee_card["monitor"]["deployed_scores"] == 2
    assert Guard("lexical", state=url).keeper.state == "void"  # the same calibration, another process: shared


def test_scores_the_store_could_not_take_are_counted_one_by_one(tmp_path):
    import sqlite3

    db = tmp_path / "s.sqlite"
    g = Guard("lexical", state=f"sqlite:///{db}")
    g.guard(*EXAMPLE)  # writes the monitor's row
    with sqlite3.connect(db) as c:
        c.execute("UPDATE monitor_state SET value = '[1]'")  # not a state object: the store cannot say
    _, r1 = g.guard(*EXAMPLE)  # 2 scores
    _, r2 = g.guard(EXAMPLE[0] + " Statins lower LDL [1].", EXAMPLE[1])  # 3 more
    assert r1.guarantee_card["monitor"]["unobserved_scores"] == 2
    assert r2.guarantee_card["monitor"]["unobserved_scores"] == 5 and g.keeper.unobserved == 5


def test_each_reset_is_kept_in_the_cards_history():
    g = Guard("lexical")
    g.guard(*EXAMPLE)
    assert g.keeper.labels(9, 10) == "void"
    assert g.keeper.reset("alice") == "ok"
    g.guard(*EXAMPLE)
    assert g.keeper.reset("bob") == "ok"
    hist = g.keeper.card()["monitor"]["history"]
    assert [(h["by"], h["was"], h["deployed_scores"]) for h in hist] == [("alice", "void", 2), ("bob", "ok", 2)]
    assert (hist[0]["labels"], hist[1]["labels"]) == ([9, 10], [0, 0])  # (missed, unsupported) returned before


def test_a_calibration_with_each_class_scores_gets_the_label_shift_robust_alarm_at_two_over_delta():
    """The shipped lexical calibration carries both classes' scores (delta 0.1): its alarm is the robust one, at
    2 / 0.1 = 20; without them, the mixture martingale's at 1 / 0.1 = 10."""
    cal = shipped("lexical")
    assert cal["monitor_scores_unsupported"] and cal["monitor_scores_supported"]
    m = Guard("lexical").keeper.card()["monitor"]
    assert m["alarm"].startswith("label-shift robust") and m["alarm_at"] == 20.0
    plain = {k: v for k, v in cal.items() if k not in ("monitor_scores_unsupported", "monitor_scores_supported")}
    m = Guard("lexical", calibration=plain).keeper.card()["monitor"]
    assert not m["alarm"].startswith("label-shift robust") and m["alarm_at"] == 10.0


def test_a_stream_holds_a_sentence_whose_successor_may_still_open_with_a_marker():
    """After 'B y [1]. ' a '(' or '[' may open a marker that belongs to B's sentence ('(2)', '(Lee, 2020)'): the cut
    stays at B's start (9) until a character no marker starts with follows."""
    from citebound.guarding.stream import commit_point

    assert [commit_point("A x [1]. B y [1]. " + tail) for tail in ("(", "[", "(2", "C")] == [9, 9, 9, 18]
    answer = "Statins lower LDL [1]. Mitochondria make ATP. [2] Aspirin thins blood [3]."
    g = guard()
    whole, rep = g.guard(answer, P)
    for cut in (answer.index("[2]"), answer.index("[2]") + 1):  # the stream pauses before, then inside, the marker
        out = list(g.stream([answer[:cut], answer[cut:]], P))
        assert "".join(out[:-1]) == whole == answer
        assert [(a.sentence_index, a.cited, a.action) for a in out[-1].audit] == [
            (0, 1, "verified"), (1, 2, "verified"), (2, 3, "verified")]
