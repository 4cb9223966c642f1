"""The package's own entry points and the batch through the core, each option observed in what comes out:
``citebound.guard`` (threshold 0.0, base, remove, proposals, group, one load per named verifier),
``citebound.load_scorer`` (every argument reaches the loader where it belongs), the definitions (names, errors,
a file that is not a mapping), several answers in one batch (each judged on its own passages, each re-attributed
on its own), and the re-attributor's proposals (how many, which). Expected values are worked by hand from fixed
scorers."""
from __future__ import annotations

import numpy as np
import pytest
from test_guard_assembly import first_word, grouped  # noqa: F401 (grouped: a fixture)

import citebound
from citebound import definitions
from citebound.guarding.core import guard_answers
from citebound.guarding.reattributors import load_reattributor


def fixed(scores, verdicts):
    """A scorer giving the i-th pair it is asked about scores[i] and verdicts[i]."""
    def score(claims, passages):
        assert len(claims) == len(scores)
        return np.array(scores, float), np.array(verdicts, bool)
    return score


# 0.9 iff the passage holds the claim's first word (lower case), else 0.1; passes iff 0.9
holds_first_word = first_word


# --- citebound.guard ---------------------------------------------------------------------------------------------

def test_a_threshold_of_zero_is_a_threshold_not_the_verdict():
    """tau = 0.0: 0.5 > 0 passes though its verdict says no; 0.0 > 0 does not, though its verdict says yes."""
    answer, passages = "Cells make ATP [1]. Cells burn fat [2].", ["Cells make ATP.", "Cells burn fat."]
    _, rep = citebound.guard(answer, passages, verifier=fixed([0.5, 0.0], [False, True]), reattributor=None,
                             threshold=0.0)
    assert [a.action for a in rep.audit] == ["verified", "flagged"]
    assert rep.rule == "pass iff score > tau = 0"
    _, rep = citebound.guard(answer, passages, verifier=fixed([0.5, 0.0], [False, True]), reattributor=None)
    assert [a.action for a in rep.audit] == ["flagged", "verified"]  # no threshold: the verdict decides


def test_base_zero_reads_marker_zero_as_the_first_passage():
    answer, passages = "Cells make ATP [0]. Aspirin thins blood [1].", ["Cells make ATP.", "Aspirin thins blood."]
    _, rep = citebound.guard(answer, passages, verifier=holds_first_word, reattributor=None, base=0)
    assert [(a.cited, a.action) for a in rep.audit] == [(0, "verified"), (1, "verified")]
    assert [a.evidence.passage for a in rep.audit] == [0, 1]
    _, rep = citebound.guard(answer, passages, verifier=holds_first_word, reattributor=None)
    assert [a.action for a in rep.audit] == ["invalid", "flagged"]  # from 1: [0] is no passage, [1] is Cells...


def test_remove_drops_the_failed_sentence_and_only_it():
    answer, passages = "Cells make ATP [1]. Aspirin cures colds [1].", ["Cells make ATP."]
    text, rep = citebound.guard(answer, passages, verifier=holds_first_word, reattributor=None, remove=True)
    assert (text, rep.removed_sentences) == ("Cells make ATP [1].", 1)
    text, rep = citebound.guard(answer, passages, verifier=holds_first_word, reattributor=None)
    assert (text, rep.removed_sentences) == ("Cells make ATP [1]. Aspirin cures colds [1 UNVERIFIED].", 0)


def test_proposals_bound_how_many_passages_bm25_tries():
    """Four passages besides the cited one, each sharing a word with the claim: proposals 1, 2 and 4 try 1, 2, 4."""
    passages = ["Unrelated text.", "Statins lower LDL.", "Statins lower cholesterol.", "Statins help hearts.",
                "Statins are drugs."]
    for n in (1, 2, 4):
        _, rep = citebound.guard("Statins cure colds [1].", passages, proposals=n,
                                 verifier=lambda c, p: (np.full(len(c), 0.1), np.zeros(len(c), bool)))
        assert (rep.audit[0].action, rep.audit[0].candidates) == ("flagged", n), n


def test_group_is_judged_on_its_own_calibration(request):
    """test_guard_assembly's grouped calibration: group 'big' has PAC tau 0.22, the pool 0.50 ('small' falls back to
    it). A score of 0.3 passes in 'big' only."""
    cal = request.getfixturevalue("grouped")

    def point_three(claims, passages):
        return np.full(len(claims), 0.3), np.ones(len(claims), bool)

    for group, action in ((None, "flagged"), ("big", "verified"), ("small", "flagged")):
        _, rep = citebound.guard("Cells make ATP [1].", ["Cells make ATP."], verifier=point_three, reattributor=None,
                                 threshold=cal, group=group)
        assert rep.audit[0].action == action, group


def test_a_named_verifier_loads_once_per_process(monkeypatch):
    from citebound.scoring import loader

    calls, real = [], loader.load_scorer

    def counted(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)

    monkeypatch.setattr(loader, "load_scorer", counted)
    citebound._scorer.cache_clear()
    try:
        for _ in range(3):
            _, rep = citebound.guard("Mitochondria produce ATP [1].", ["Mitochondria produce ATP in cells."],
                                     verifier="lexical")
            assert rep.verified == 1
    finally:
        citebound._scorer.cache_clear()
    assert calls == ["lexical"]


def test_load_scorer_hands_each_argument_to_its_own_parameter(monkeypatch):
    from citebound.scoring import loader

    seen = []
    monkeypatch.setattr(loader, "load_scorer", lambda *a, **kw: seen.append((a, kw)) or "scorer")
    out = citebound.load_scorer("lexical", overrides={"k": 1}, model_path="/m", cache_dir="/c", runtime={"r": 2})
    assert out == "scorer"
    assert seen == [(("lexical", {"k": 1}), {"model_path": "/m", "cache_dir": "/c", "runtime": {"r": 2}})]


# --- the definitions -----------------------------------------------------------------------------------------------

def test_available_names_are_the_files_stems_and_an_unknown_group_is_an_error():
    names = definitions.available("verifier")
    assert "lexical" in names and not any(n.endswith(".yaml") for n in names)
    assert all((definitions.ROOT / "verifier" / f"{n}.yaml").is_file() for n in names)
    assert definitions.available("reattributor") == ["bm25", "verifier"]
    with pytest.raises(definitions.DefinitionError, match="unknown definition group 'verifiers'; valid: verifier, "
                                                          "reattributor, windowing"):
        definitions.available("verifiers")


def test_an_unknown_name_names_the_three_nearest_and_every_valid_one():
    with pytest.raises(definitions.DefinitionError) as e:
        definitions.path_of("verifier", "minicheck")
    msg = str(e.value)
    # difflib's three closest of minicheck_deberta, minicheck_flant5, minicheck_roberta, bespoke_minicheck, ...
    import difflib

    near = difflib.get_close_matches("minicheck", definitions.available("verifier"), n=3)
    assert len(near) == 3
    assert f"(did you mean {', '.join(near)}?)" in msg
    assert f"valid choices: {definitions.available('verifier')}" in msg


def test_a_definition_that_is_not_a_mapping_is_refused(tmp_path, monkeypatch):
    (tmp_path / "verifier").mkdir()
    (tmp_path / "verifier" / "listed.yaml").write_text("- kind: lexical\n")
    monkeypatch.setattr(definitions, "ROOT", tmp_path)
    with pytest.raises(definitions.DefinitionError, match="listed.yaml: expected a mapping, got list"):
        definitions.load("verifier", "listed")


# --- several answers in one batch -------------------------------------------------------------------------------

def test_each_answer_of_a_batch_is_judged_on_its_own_passages():
    """Answer A's passage 1 holds its claim; B's passage 1 does not (B's claim is in A's passage): one call each."""
    calls = []

    def recording(claims, passages):
        calls.append(list(zip(claims, passages)))
        return holds_first_word(claims, passages)

    out = guard_answers([("Cells make ATP [1].", ["Cells make ATP."], 1),
                         ("Cells burn fat [1].", ["Aspirin thins blood."], 1),
                         ("Aspirin thins blood [1].", ["Aspirin thins blood."], 1)], recording, reattribute=None)
    assert [[a.action for a in r.audit] for _, r in out] == [["verified"], ["flagged"], ["verified"]]
    assert [r.n_citations for _, r in out] == [1, 1, 1]
    assert calls[0] == [("Cells make ATP.", "Cells make ATP."), ("Cells burn fat.", "Aspirin thins blood."),
                        ("Aspirin thins blood.", "Aspirin thins blood.")]


def test_each_failed_citation_is_re_attributed_on_its_own():
    """Two answers whose sentence 0 cites a wrong passage, and one sentence with two wrong citations: each of the
    four audits moves to the one passage that holds its claim's first word."""
    p1 = ["Aspirin thins blood.", "Cells make ATP.", "Unrelated."]
    p2 = ["Unrelated.", "Statins lower LDL.", "Aspirin thins blood."]
    out = guard_answers([("Cells make ATP [1].", p1, 1), ("Statins lower LDL [1][3].", p2, 1)], holds_first_word,
                        reattribute="verifier")
    (t1, r1), (t2, r2) = out
    assert [(a.action, a.new_pointer) for a in r1.audit] == [("reattributed", 2)]
    assert [(a.action, a.new_pointer) for a in r2.audit] == [("reattributed", 2), ("reattributed", 2)]
    assert (t1, t2) == ("Cells make ATP [2 (was 1)].", "Statins lower LDL [2 (was 1)][2 (was 3)].")


def test_the_claim_is_what_a_reader_sees_and_counts_are_per_answer():
    text = "Mito\u200bchondria make ATP [1]. An aside without a citation. Another aside."
    _, rep = citebound.guard(text, ["Mitochondria make ATP."], verifier=holds_first_word, reattributor=None)
    assert rep.audit[0].claim == "Mitochondria make ATP."
    assert (rep.n_sentences, rep.n_cited_sentences, rep.n_citations, rep.uncited) == (3, 1, 1, 2)


def test_evidence_is_its_window_of_the_passage_exactly():
    """A 1,000-character passage: lexical scores three windows, [0, 600), [300, 900) and [400, 1000) (the last
    reaches the end); the claim's words sit only in the first 100 characters, so the evidence is [0, 600)."""
    passage = "Mitochondria produce ATP through oxidative phosphorylation".ljust(100, ".")
    passage += ("Filler words about weather patterns. " * 30)[:900]
    assert len(passage) == 1000
    _, rep = citebound.guard("Mitochondria produce ATP through oxidative phosphorylation [1].", [passage],
                             verifier="lexical", reattributor=None, threshold=0.5)
    ev = rep.audit[0].evidence
    assert (ev.passage, ev.start, ev.end) == (1, 0, 600)
    assert ev.text == passage[:600]


def test_every_answer_of_a_batch_is_verified_not_only_the_first():
    out = guard_answers([("Cells make ATP [1].", ["Cells make ATP."], 1), ("Cells burn fat [1].", ["Aspirin."], 1),
                         ("Aspirin works [2].", ["x", "y"], 1)], holds_first_word, reattribute=None)
    assert [(r.verified, r.flagged) for _, r in out] == [(1, 0), (0, 1), (0, 1)]
    assert [t for t, _ in out] == ["Cells make ATP [1].", "Cells burn fat [1 UNVERIFIED].", "Aspirin works [2 UNVERIFIED]."]


# --- the re-attributor's proposals ---------------------------------------------------------------------------------

def test_bm25_proposes_the_best_others_after_leaving_out_the_cited():
    """The cited passage (0) is BM25's best; proposals=2 gives the next two, best first, not one. Over six
    passages 'ldl' (in three) has IDF log(3.5 / 3.5) = 0, 'statin' and 'lower' (in two) log(4.5 / 2.5) > 0: only
    passage 1 scores above 0, and the tie at 0 goes to the lower index (2)."""
    ra = load_reattributor("bm25", 2)
    assert ra.proposals == 2
    passages = ["statins lower ldl cholesterol", "statins lower ldl", "ldl particles", "weather report today",
                "football scores", "garden flowers"]
    assert ra.propose("statins lower ldl cholesterol", passages, {0}) == [1, 2]


def test_the_verifier_reattributor_proposes_every_other_passage_whatever_proposals_says():
    ra = load_reattributor("verifier", 1)
    assert ra.propose("anything", ["a", "b", "c", "d"], {2}) == [0, 1, 3]
