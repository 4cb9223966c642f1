"""failure_kinds and citation_pr: small hand-made answers worked out by hand, bootstrap CIs recomputed
in an independent loop, and the failure-kind split checked against the guard's own outcome."""
import json

import numpy as np
import pandas as pd
import pytest

from citebound.guarding.guard import Guard
from citebound.guarding.reattributors import Reattributor
from citebound.scoring.loader import load_scorer
from citebound.study.analysis import (
    citation_pr_table,
    classify,
    failure_kinds_table,
    gold_agreement,
    gold_cases,
    proposal_pairs,
    sample_items,
)
from citebound.study.analysis.failure_kinds import answer_passages
from citebound.study.prepare import prepare_set


def _boot_ci(num, den, n_boot, seed):
    """Answer bootstrap of sum(num) / sum(den), written out: the same draws the analyses make."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    idx = np.random.default_rng(seed).integers(len(num), size=(n_boot, len(num)))
    vals = []
    for r in idx:
        d = den[r].sum()
        if d > 0:
            vals.append(num[r].sum() / d)
    return np.quantile(vals, 0.025), np.quantile(vals, 0.975)


def _cited(rows, verifiers=("v",)):
    """rows: (item, sentence, passage_index, verdict per verifier...)"""
    d = pd.DataFrame(rows, columns=["item_id", "sentence_id", "passage_index", *[f"verdict_{v}" for v in verifiers]])
    d["pair_id"] = [f"{s}:{p}:{k}" for k, (s, p) in enumerate(zip(d.sentence_id, d.passage_index))]
    return d


# ---- citation_pr -------------------------------------------------------------------------------------

def _pr_source():
    # item A: A0 cites 0 (accepted) and 1 (rejected): supported, 1 needed, 1 irrelevant
    #         A1 cites 2 (rejected): unsupported, nothing needed, nothing irrelevant
    # item B: B0 cites 0 twice (accepted; counts once): supported, 1 needed
    #         B1 cites 1 and 2 (both accepted): supported, 2 needed
    # verifier w accepts only A1's citation and B0's
    return _cited([("A", "A0", 0, True, False), ("A", "A0", 1, False, False), ("A", "A1", 2, False, True),
                   ("B", "B0", 0, True, True), ("B", "B0", 0, True, True), ("B", "B1", 1, True, False),
                   ("B", "B1", 2, True, False)], ("v", "w"))


def test_citation_pr_by_hand():
    t = citation_pr_table({"s": _pr_source()}, ["v", "w"], n_boot=300, seed=5).set_index(["verifier", "source"])
    r = t.loc[("v", "s")]
    assert (r.n_items, r.n_sentences, r.n_citations) == (2, 4, 6)
    assert r.recall == pytest.approx(3 / 4)
    assert r.precision == pytest.approx(4 / 6)
    assert r.irrelevant_share == pytest.approx(1 / 6)
    assert r.f1 == pytest.approx(2 * (4 / 6) * (3 / 4) / (4 / 6 + 3 / 4))
    # per item: A sentences 2, supported 1, citations 3, needed 1, irrelevant 1; B 2, 2, 3, 3, 0
    assert (r.recall_ci_low, r.recall_ci_high) == pytest.approx(_boot_ci([1, 2], [2, 2], 300, 5))
    assert (r.precision_ci_low, r.precision_ci_high) == pytest.approx(_boot_ci([1, 3], [3, 3], 300, 5))
    assert (r.irrelevant_share_ci_low, r.irrelevant_share_ci_high) == pytest.approx(_boot_ci([1, 0], [3, 3], 300, 5))
    # verifier w: A0 unsupported (0 of 2), A1 supported (1 of 1), B0 supported, B1 unsupported
    w = t.loc[("w", "s")]
    assert w.recall == pytest.approx(2 / 4) and w.precision == pytest.approx(2 / 6) and w.irrelevant_share == 0


def test_citation_pr_pooled_counts_every_source():
    other = _cited([("C", "C0", 0, False, False)], ("v", "w"))
    t = citation_pr_table({"s": _pr_source(), "t": other}, ["v"], n_boot=50, seed=1).set_index("source")
    assert t.loc["t", "recall"] == 0 and t.loc["t", "precision"] == 0
    assert t.loc["t", "f1"] == 0.0  # precision and recall 0: F1 is 0, not 0 / 0
    assert t.loc["pooled", "n_items"] == 3 and t.loc["pooled", "n_sentences"] == 5
    assert t.loc["pooled", "recall"] == pytest.approx(3 / 5)
    assert t.loc["pooled", "precision"] == pytest.approx(4 / 7)


# ---- failure_kinds -----------------------------------------------------------------------------------

def _fk_data():
    # item A: A0 cites 0 (rejected); a proposal (r2) is accepted -> misattributed
    #         A1 cites 1 (rejected); its one proposal is rejected   -> ungrounded
    #         A2 cites 2 (accepted)                                 -> supported
    # item B: B0 cites 0 (rejected), no proposal                    -> ungrounded
    #         B1 cites 1 (rejected) and 2 (accepted); its proposal is rejected -> 1 ungrounded
    cited = _cited([("A", "A0", 0, False), ("A", "A1", 1, False), ("A", "A2", 2, True),
                    ("B", "B0", 0, False), ("B", "B1", 1, False), ("B", "B1", 2, True)])
    props = _cited([("A", "A0", 1, False), ("A", "A0", 2, True), ("A", "A1", 0, False), ("B", "B1", 0, False)])
    return cited, props


def test_classify_by_hand():
    cited, props = _fk_data()
    c = classify(cited, props, "v")
    assert c["unsupported"].tolist() == [True, True, False, True, True, False]
    assert c["misattributed"].tolist() == [True, False, False, False, False, False]
    assert c["ungrounded"].tolist() == [False, True, False, True, True, False]


def test_failure_kinds_table_by_hand_with_independent_cis():
    cited, props = _fk_data()
    t = failure_kinds_table({"s": cited}, {"s": props}, {"s": ["A", "B"]}, ["v"], n_boot=400, seed=7)
    r = t.set_index("source").loc["s"]
    assert (r.n_items, r.n_citations, r.n_unsupported, r.n_misattributed, r.n_ungrounded) == (2, 6, 4, 1, 3)
    assert r.misattributed_share == pytest.approx(1 / 4)
    assert r.ungrounded_rate == pytest.approx(3 / 6)
    # per item: A unsupported 2, misattributed 1, ungrounded 1, citations 3; B 2, 0, 2, 3
    assert (r.misattributed_share_ci_low, r.misattributed_share_ci_high) == pytest.approx(_boot_ci([1, 0], [2, 2], 400, 7))
    assert (r.ungrounded_rate_ci_low, r.ungrounded_rate_ci_high) == pytest.approx(_boot_ci([1, 2], [3, 3], 400, 7))
    # only the sampled items count
    one = failure_kinds_table({"s": cited}, {"s": props}, {"s": ["A"]}, ["v"], n_boot=50, seed=7).iloc[0]
    assert (one.n_items, one.n_citations, one.n_unsupported, one.n_misattributed) == (1, 3, 2, 1)
    assert one.misattributed_share == pytest.approx(1 / 2)


def test_sample_items_is_seeded_and_bounded():
    ids = [f"i{k}" for k in range(30)] * 2
    a, b = sample_items(ids, 10, 3), sample_items(ids, 10, 3)
    assert a == b and len(a) == 10 and len(set(a)) == 10 and set(a) <= set(ids)
    assert sample_items(ids, 10, 4) != a
    assert sample_items(ids, None, 3) == sorted(set(ids)) == sample_items(ids, 30, 3)


ANSWER = ("Aspirin irreversibly inhibits cyclooxygenase in platelets [2]. Statins lower LDL cholesterol by "
          "inhibiting HMG-CoA reductase [2]. Aspirin reduced the risk of a first heart attack in men [1]. "
          "Aspirin also cures migraine in every patient [3]. Vitamin C prevents the common cold [1][2].")
PASSAGES = [
    "Aspirin acetylates a serine residue of cyclooxygenase and so irreversibly inhibits it in platelets.",
    "Statins competitively inhibit HMG-CoA reductase and so lower LDL cholesterol in plasma.",
    "In the Physicians' Health Study, low-dose aspirin reduced the risk of a first heart attack in men.",
    "Migraine is a primary headache disorder with recurrent attacks.",
]


def test_failure_kind_is_the_guards_own_outcome(tmp_path):
    """The analysis path (prepare -> proposals -> score -> classify) gives each rejected citation the
    guard's outcome on the same answer: misattributed <=> re-attributed, ungrounded <=> flagged."""
    src = tmp_path / "answers.jsonl"
    src.write_text(json.dumps({"id": "x", "output": ANSWER, "ctxs": [{"text": p} for p in [*PASSAGES, " "]]}) + "\n")
    prep = prepare_set("released/t", "ctxs_answers", {"answers": src}, {"citation_base": 1})
    assert len(prep.passages) == 4  # the blank passage is not one the agent had
    props, counts = proposal_pairs(prep.pairs, answer_passages(prep.passages), Reattributor("bm25", "bm25"),
                                   ["x"], "released/t/proposals")
    assert counts["sentences"] == 5 and counts["citations"] == 6
    # a sentence is never proposed a passage it cites, and every proposal is one of the answer's passages
    for sid, g in props.groupby("sentence_id"):
        cited = set(prep.pairs.loc[prep.pairs.sentence_id == sid, "passage_index"])
        assert not cited & set(g.passage_index) and set(g.passage_index) <= {0, 1, 2, 3}
        assert len(g) == min(3, 4 - len(cited))
    scorer = load_scorer("lexical")
    for df in (prep.pairs, props):
        df["verdict_lexical"] = scorer.score(df["claim"].tolist(), df["passage"].tolist()).verdict
    kinds = classify(prep.pairs, props, "lexical")
    ours = {(int(s.split(":")[1]), int(p)): ("verified" if not u else "reattributed" if m else "flagged")
            for s, p, u, m in zip(prep.pairs.sentence_id, prep.pairs.passage_index, kinds.unsupported,
                                  kinds.misattributed)}
    _, report = Guard("lexical").guard(ANSWER, PASSAGES)
    guard = {(a.sentence_index, a.cited - 1): a.action for a in report.audit}
    assert ours == guard
    assert set(guard.values()) == {"verified", "reattributed", "flagged"}  # the example exercises every kind


# ---- the gold check -----------------------------------------------------------------------------------

def _gold():
    rows = []
    # G0 (item G): gold p0 accepted, wrong p1 p2 rejected -> both cases classed right
    # G1 (item G): both wrong passages accepted            -> both cases' wrong citation accepted: not classed
    # G2 (item H): nothing accepted                        -> misattributed case called ungrounded (wrong)
    # G3 (item H): one wrong passage only                  -> no case; G4: no gold passage -> no case
    spec = {"G0": ("G", [1, 0, 0], [True, False, False]), "G1": ("G", [1, 0, 0], [True, True, True]),
            "G2": ("H", [1, 0, 0], [False, False, False]), "G3": ("H", [1, 0], [True, False]),
            "G4": ("H", [0, 0, 0], [False, False, True])}
    for sid, (item, labels, verdicts) in spec.items():
        for k, (lab, ver) in enumerate(zip(labels, verdicts)):
            rows.append({"pair_id": f"{sid}:{k}", "item_id": item, "sentence_id": sid, "passage_index": k,
                         "claim": "aspirin inhibits cyclooxygenase", "passage": f"passage {k} about aspirin",
                         "label": float(lab), "verdict_v": ver})
    return pd.DataFrame(rows)


def test_gold_cases_and_agreement_by_hand():
    gold = _gold()
    cases = gold_cases(gold, Reattributor("bm25", "bm25"), seed=2)
    assert sorted(set(cases.sentence_id)) == ["G0", "G1", "G2"]
    for sid, g in cases.groupby("sentence_id"):
        m, u = g.set_index("truth").loc["misattributed"], g.set_index("truth").loc["ungrounded"]
        assert m.cited_pair == u.cited_pair and m.cited_pair in {f"{sid}:1", f"{sid}:2"}
        other = ({f"{sid}:1", f"{sid}:2"} - {m.cited_pair}).pop()
        assert sorted(m.proposals) == sorted([f"{sid}:0", other])  # the gold passage is there to be found
        assert u.proposals == [other]  # the gold passage was removed
    t = gold_agreement(gold, cases, ["v"], n_boot=300, seed=2).iloc[0]
    assert (t.n_cases, t.n_wrong_accepted, t.n_classed) == (6, 2, 4)
    assert (t.gold_mis_called_mis, t.gold_mis_called_ung, t.gold_ung_called_mis, t.gold_ung_called_ung) == (1, 1, 0, 2)
    assert t.agreement == pytest.approx(3 / 4)
    # per item: G classed 2, agreeing 2 (G0); H classed 2, agreeing 1 (G2)
    assert (t.agreement_ci_low, t.agreement_ci_high) == pytest.approx(_boot_ci([2, 1], [2, 2], 300, 2))


def test_pooled_rows_keep_sources_apart_when_they_share_item_ids():
    # both sources number their answers A, B: pooled there are 4 answers, not 2
    t = citation_pr_table({"s": _pr_source(), "t": _pr_source()}, ["v"], n_boot=50, seed=1).set_index("source")
    assert t.loc["s", "n_items"] == 2 and t.loc["pooled", "n_items"] == 4 and t.loc["pooled", "n_sentences"] == 8


def test_proposals_name_passages_by_index_when_a_blank_one_sits_between():
    """Passage 2 of 4 (index 1) is blank, so the answer's non-blank passages are indices 0, 2 and 3 at positions 0, 1
    and 2. The sentence cites [3] (index 2): the proposals are indices 0 and 3, never 2, named r0 and r3, with
    their own texts."""
    pairs = pd.DataFrame([{"set": "s", "pair_id": "x:0:2", "item_id": "x", "sentence_id": "x:0",
                           "claim": "statins lower ldl cholesterol", "passage": "P2 statins", "passage_index": 2,
                           "label": np.nan, "group": "", "split": "", "marker": "[3]", "frozen_score": np.nan}])
    passages = {"x": ([0, 2, 3], ["P0 statins lower ldl", "P2 statins", "P3 ldl cholesterol statins"])}
    table, counts = proposal_pairs(pairs, passages, Reattributor("bm25", "bm25"), ["x"], "s/proposals")
    assert sorted(table["passage_index"].tolist()) == [0, 3]
    assert sorted(table["pair_id"].tolist()) == ["x:0:r0", "x:0:r3"]
    assert dict(zip(table["passage_index"], table["passage"])) == {0: "P0 statins lower ldl", 3: "P3 ldl cholesterol statins"}
    assert counts["proposals"] == 2 and counts["sentences_without_alternative"] == 0


def test_a_supported_citation_is_never_misattributed_though_its_sentence_has_an_accepted_proposal():
    # C0 cites 0 (accepted) and 1 (rejected); the proposal 2 is accepted: only the rejected citation is misattributed
    cited = _cited([("C", "C0", 0, True), ("C", "C0", 1, False)])
    props = _cited([("C", "C0", 2, True)])
    c = classify(cited, props, "v")
    assert c["unsupported"].tolist() == [False, True]
    assert c["misattributed"].tolist() == [False, True] and c["ungrounded"].tolist() == [False, False]


def test_a_sample_of_exactly_max_items_is_every_item_and_one_fewer_is_drawn():
    """Three distinct items (one given twice): max_items 3 keeps all three, sorted, whatever the seed; 2 draws two
    of them; None keeps all."""
    from citebound.study.analysis.failure_kinds import sample_items

    ids = ["c", "a", "b", "a"]
    assert sample_items(ids, 3, seed=1) == sample_items(ids, None, seed=1) == ["a", "b", "c"]
    assert [len(sample_items(ids, 2, seed=s)) for s in range(5)] == [2] * 5
    assert {tuple(sample_items(ids, 2, seed=s)) for s in range(20)} != {("a", "b")}  # drawn, not the first two


def test_the_proposal_table_is_in_sentence_order_whatever_order_the_pairs_come_in():
    """Two sentences of one answer, their pairs given last sentence first: the proposals come sentence by sentence
    in id order (x:0's, then x:1's), the same table as from the pairs in order."""
    def pair(sid, k, claim):
        return {"set": "s", "pair_id": f"{sid}:{k}", "item_id": "x", "sentence_id": sid, "claim": claim,
                "passage": f"P{k}", "passage_index": k, "label": np.nan, "group": "", "split": "", "marker": "[1]",
                "frozen_score": np.nan}

    pairs = pd.DataFrame([pair("x:1", 1, "ldl cholesterol falls"), pair("x:0", 0, "statins lower ldl")])
    passages = {"x": ([0, 1, 2], ["statins lower ldl", "ldl cholesterol falls", "statins lower ldl cholesterol"])}
    table, _ = proposal_pairs(pairs, passages, Reattributor("bm25", "bm25"), ["x"], "s/proposals")
    ordered, _ = proposal_pairs(pairs.iloc[::-1].reset_index(drop=True), passages, Reattributor("bm25", "bm25"),
                                ["x"], "s/proposals")
    assert table["sentence_id"].tolist() == sorted(table["sentence_id"].tolist())
    assert set(table["sentence_id"]) == {"x:0", "x:1"}
    pd.testing.assert_frame_equal(table, ordered)
