"""The network designs of the trained verifier (#25): windows and hard negatives by hand, seeded training on
a tiny random-weight BERT loaded through from_pretrained, the saved model read back by the guard's trained
verifier, and the selection across designs by hand."""
import json

import numpy as np
import pandas as pd
import pytest

from citebound.study.train_networks import Network, best_window_text, hard_negatives, training_units
from citebound.study.train_verifier import choose_design, design_table, designs_card
from citebound.verifiers import build_verifier, score_pairs
from citebound.verifiers.lexical import term_recall

WORDS = ("the a aspirin does not inhibit cox 44 percent men heart attack reduced risk by in statins lower ldl "
         "fever sleep coffee committee budget library").split()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A 2-layer BERT with random weights and a word-level tokenizer, saved like a hub checkpoint."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("bert")
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                            special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]").save_pretrained(d)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(d)
    return str(d)


WIN = {"window_chars": 600, "stride": 300, "claim_cap": 600}


def toy_pool():
    c = ["aspirin reduced heart attack risk", "statins lower ldl", "coffee reduced sleep", "aspirin does not inhibit cox",
         "heart attack risk in men"]
    rows = [("s1", c[0], "in men aspirin reduced heart attack risk by 44 percent", 1),
            ("s1", c[0], "aspirin does not reduce fever", 0),
            ("s1", c[1], "statins lower ldl in men", 1),
            ("s1", c[2], "the committee budget ldl", 0),
            ("s1", "sleep in men", "coffee and tea", 0),  # (a larger s1, so that 'ldl' has a positive BM25 idf)
            ("s1", "sleep in men", "fever in men", 0),
            ("s2", c[2], "coffee reduced sleep in men", 1),
            ("s2", c[3], "aspirin does not inhibit cox", 1),
            ("s2", c[3], "the library budget", 0),
            ("s2", c[4], "statins lower ldl heart", 0)]
    return pd.DataFrame(rows, columns=["source", "claim", "evidence", "label"])


def test_best_window_is_the_one_with_most_claim_terms():
    passage = "the committee budget " * 20 + "aspirin reduced heart attack risk " + "the library " * 30
    w = best_window_text("aspirin reduced heart attack risk", passage, 200, 100)
    assert "aspirin reduced heart attack risk" in w
    from citebound.verifiers.base import make_windows
    ws = make_windows(passage, 200, 100)
    assert term_recall("aspirin reduced heart attack risk", w) == max(term_recall("aspirin reduced heart attack risk", x)
                                                                       for x in ws)


def test_hard_negative_is_the_claims_own_refutation_else_bm25_in_the_same_source():
    hard = hard_negatives(toy_pool().rename(columns={"evidence": "window"}))
    # supported rows 0, 2, 6, 7: claim 0 and claim 3 have their own unsupported evidence; claim 2's is in
    # the other source (a claim's own refutation is looked up across the pool); claim 1 has none, so BM25
    # over source s1's other windows: only 'the committee budget ldl' shares a term ('ldl'), and s2's
    # 'statins lower ldl heart' (which would win) is another source's
    assert hard == ["aspirin does not reduce fever", "the committee budget ldl", "the committee budget ldl",
                    "the library budget"]


def test_training_units_cap_claims_and_pair_supported_rows_with_a_hard_negative():
    pool = toy_pool()
    pool.loc[0, "claim"] = "aspirin " * 200
    u = training_units(pool, WIN)
    assert len(u.loc[0, "claim"]) == 600
    assert (u.loc[u.label == 0, "hard"] == "").all() and (u.loc[u.label == 1, "hard"] != "").all()


@pytest.mark.parametrize("design", ["cross_encoder", "bi_encoder"])
def test_seeded_training_checkpoints_and_the_saved_model_scores_the_same(tiny_bert, tmp_path, design):
    pool = toy_pool()
    units = training_units(pool, WIN)
    seen = []
    a = Network(design, tiny_bert, batch_size=2, lr=1e-3, max_length=32, seed=7)
    a.fit(units, 6, checkpoints=[2, 4, 6, 99], at_checkpoint=seen.append)
    assert seen == [2, 4, 6]  # checkpoints within the budget, each once
    assert [c["examples"] for c in a.curve] == [2, 4, 6] and all(np.isfinite(c["loss"]) for c in a.curve)
    b = Network(design, tiny_bert, batch_size=2, lr=1e-3, max_length=32, seed=7)
    b.fit(units, 6)
    claims, passages = pool["claim"].tolist(), pool["evidence"].tolist()
    sa, sb = a.pair_scores(claims, passages, WIN), b.pair_scores(claims, passages, WIN)
    assert sa == pytest.approx(sb, abs=1e-6)  # same seed, same model
    c = Network(design, tiny_bert, batch_size=2, lr=1e-3, max_length=32, seed=8)
    c.fit(units, 6)
    assert not np.allclose(c.pair_scores(claims, passages, WIN), sa, atol=1e-6)
    a.save(tmp_path / "m", {"encoder": "tiny"})
    meta = json.loads((tmp_path / "m" / "citebound.json").read_text())
    assert meta["design"] == design and meta["threshold"] == a.threshold
    v = build_verifier({"name": "trained", "kind": "trained", "model": str(tmp_path / "m"), "batch_size": 4})
    ps = score_pairs(v, claims, passages, progress=False)
    assert ps.score == pytest.approx(sa, abs=1e-5)
    assert list(ps.verdict) == list(sa >= a.threshold)
    # a network's verdict cut is the one it was trained with (its citebound.json), whatever the definition says
    v2 = build_verifier({"name": "trained", "kind": "trained", "model": str(tmp_path / "m"), "threshold": 0.999})
    assert v2.threshold == meta["threshold"] == a.threshold != 0.999


def test_design_table_and_choice_by_hand():
    head = pd.DataFrame([
        # variant all: C=0.1 chosen (its gold rows say so); the C=1 LOSO rows are left out
        ["all", 1.0, "loso:a", 10, 0.70, 0.60, 0.10, np.nan, np.nan],
        ["all", 0.1, "loso:a", 10, 0.72, 0.60, 0.12, np.nan, np.nan],
        ["all", 0.1, "gold1", 50, 0.70, 0.66, 0.04, -0.01, 0.09],
        ["all", 0.1, "gold2", 40, 0.71, 0.60, 0.11, 0.02, 0.20],
    ], columns=["variant", "C", "evaluation", "n", "auc", "embedding_auc", "delta", "delta_ci_low", "delta_ci_high"])
    net = pd.DataFrame([  # the first row is a LOSO row at another stopping point than the gold rows'
        ["cross_encoder", "all", 16, "loso:a", 10, 0.58, 0.60, -0.02, np.nan, np.nan],
        ["cross_encoder", "all", 8, "loso:a", 10, 0.65, 0.60, 0.05, np.nan, np.nan],
        ["cross_encoder", "all", 8, "gold1", 50, 0.75, 0.66, 0.09, 0.03, 0.15],
        ["cross_encoder", "all", 8, "gold2", 40, 0.68, 0.60, 0.08, 0.01, 0.16],
        ["cross_encoder", "domain_matched", 8, "gold1", 50, 0.80, 0.66, 0.14, 0.08, 0.2],
        ["cross_encoder", "domain_matched", 8, "gold2", 40, 0.50, 0.60, -0.10, -0.2, 0.0],
    ], columns=["design", "variant", "examples", "evaluation", "n", "auc", "embedding_auc", "delta", "delta_ci_low",
                "delta_ci_high"])
    t = design_table(head, [net])
    assert len(t) == 3 + 3 + 2  # head at C=0.1; cross/all at 8 examples; cross/domain_matched gold only
    assert set(t.loc[t.design == "frozen_head", "setting"]) == {"C=0.1"}
    assert set(t.loc[t.design == "cross_encoder", "setting"]) == {"examples=8"}
    d = choose_design(t, ["gold1", "gold2"], 0.05)
    # mean gold AUC: head 0.705, cross/all 0.715, cross/domain 0.65 -> cross_encoder/all
    assert (d["design"], d["variant"], d["setting"]) == ("cross_encoder", "all", "examples=8")
    assert d["mean_gold_auc"] == pytest.approx(0.715)
    assert d["adopted"] is True and d["reasons"] == []
    # the margin is a minimum: a gain exactly at it is enough (gold2's delta is 0.08)
    assert choose_design(t, ["gold1", "gold2"], 0.08)["adopted"] is True
    # a margin of 0.085 fails gold2 (0.08) only
    d2 = choose_design(t, ["gold1", "gold2"], 0.085)
    assert not d2["adopted"] and len(d2["reasons"]) == 1 and d2["reasons"][0].startswith("gold2")
    card = designs_card(t, d, {"max_pairs_per_source": 10, "seed": 1, "encoder": "e", "C": [0.1, 1.0],
                               "networks": {"examples": 16, "checkpoints": [8, 16], "lr": 3e-5, "batch_size": 4,
                                            "cross_encoder": {"examples": 32, "lr": 1e-4}}}, {"cross_encoder": 12.4})
    # each design's row shows its own budget: the cross-encoder's overrides, the bi-encoder the shared keys
    assert "cross-entropy) | 32 examples, batch 4, AdamW lr 0.0001, max length None, stopping point from [8, 16] |" in card
    assert "| 16 examples, batch 4, AdamW lr 3e-05, max length None, stopping point from [8, 16], supported claims" in card
    assert "| cross_encoder | all | examples=8 | gold1 | 50 | 0.750 | 0.660 | +0.090 | +0.030 to +0.150 |" in card
    assert "prefers `cross_encoder` / `all` (examples=8), mean gold AUC 0.715. **Adopted.**" in card
    assert "- cross_encoder: 12 s" in card
    # the domain-matched variant alone: no LOSO, so never adopted
    only = t[(t.design == "cross_encoder") & (t.variant == "domain_matched")]
    d3 = choose_design(only, ["gold1", "gold2"], 0.0)
    assert not d3["adopted"] and "no leave-one-source-out evaluation for this variant" in d3["reasons"]


HEAD_COLS = ["variant", "C", "evaluation", "n", "auc", "embedding_auc", "delta", "delta_ci_low", "delta_ci_high"]
NET_COLS = ["design", "variant", "examples"] + HEAD_COLS[2:]


def test_the_design_table_keeps_the_order_its_tables_list_variants_in():
    """Variants listed domain_matched first (not alphabetical order): the table keeps that order, the head's
    rows before the network's, one row label each."""
    head = pd.DataFrame([["domain_matched", 1.0, "gold1", 9, 0.7, 0.6, 0.1, 0.0, 0.2],
                         ["all", 0.1, "gold1", 9, 0.6, 0.6, 0.0, -0.1, 0.1]], columns=HEAD_COLS)
    net = pd.DataFrame([["cross_encoder", "domain_matched", 8, "gold1", 9, 0.8, 0.6, 0.2, 0.1, 0.3],
                        ["cross_encoder", "all", 8, "gold1", 9, 0.5, 0.6, -0.1, -0.2, 0.0]], columns=NET_COLS)
    t = design_table(head, [net])
    assert list(zip(t.design, t.variant, t.setting)) == [
        ("frozen_head", "domain_matched", "C=1"), ("frozen_head", "all", "C=0.1"),
        ("cross_encoder", "domain_matched", "examples=8"), ("cross_encoder", "all", "examples=8")]
    assert t.index.tolist() == [0, 1, 2, 3]


def test_a_tie_in_mean_gold_auc_goes_to_the_design_listed_first():
    """The frozen head (listed first, the cheaper design) and the cross-encoder tie at a mean gold AUC of 0.7:
    the head is chosen, though 'cross_encoder' sorts before 'frozen_head'."""
    t = pd.DataFrame([["frozen_head", "all", "C=0.1", "gold1", 9, 0.7, 0.6, 0.1, 0.05, 0.15],
                      ["frozen_head", "all", "C=0.1", "loso:a", 9, 0.7, 0.6, 0.1, np.nan, np.nan],
                      ["cross_encoder", "all", "examples=8", "gold1", 9, 0.7, 0.6, 0.1, 0.05, 0.15],
                      ["cross_encoder", "all", "examples=8", "loso:a", 9, 0.7, 0.6, 0.1, np.nan, np.nan]],
                     columns=["design", "variant", "setting"] + HEAD_COLS[2:])
    d = choose_design(t, ["gold1"], 0.05)
    assert (d["design"], d["setting"], d["mean_gold_auc"]) == ("frozen_head", "C=0.1", 0.7)
    flipped = choose_design(t.iloc[[2, 3, 0, 1]], ["gold1"], 0.05)
    assert flipped["design"] == "cross_encoder"


def test_kit_slice_texts_are_questions_and_answer_sentences_and_dedupe_removes_them(tmp_path):
    from citebound.study.train_verifier import kit_slice_texts
    from citebound.training.evaluation import dedupe_against

    p = tmp_path / "qa.csv"
    pd.DataFrame({"doc_id": [0], "question": ["Is RET mutated in HSCR?"],
                  "answer": ["RET mutations cause HSCR. They are common in familial cases."],
                  "relevant_passage_ids": ["[1]"]}).to_csv(p, index=False)
    assert kit_slice_texts(str(p)) == ["Is RET mutated in HSCR?", "RET mutations cause HSCR.",
                                       "They are common in familial cases."]
    train = pd.DataFrame({"source": ["a", "a", "b"], "claim": ["ret mutations cause HSCR", "Other claim.",
                                                               "They are common in familial cases"]})
    kept, removed = dedupe_against(train, {"kit_slice": kit_slice_texts(str(p))})
    assert kept["claim"].tolist() == ["Other claim."]
    assert removed.set_index("source")["removed"].to_dict() == {"a": 1, "b": 1}
    pd.DataFrame({"q": ["x"]}).to_csv(p, index=False)
    with pytest.raises(ValueError, match="no column"):
        kit_slice_texts(str(p))


def test_of_tied_windows_the_first_is_the_training_window():
    """Two 10-character windows (stride 10) each hold one of the claim's two terms: recall 1/2 both; the first."""
    assert best_window_text("aspirin fever", "aspirin..." + "fever....." + "xxxxxxxxxx", 10, 10) == "aspirin..."
    assert best_window_text("aspirin fever", "fever....." + "aspirin..." + "xxxxxxxxxx", 10, 10) == "fever....."


@pytest.mark.parametrize("design, cut", [("cross_encoder", 0.5), ("bi_encoder", 0.75)])
def test_each_designs_verdict_cut(tiny_bert, design, cut):
    """A cross-encoder's P(support) is cut at 0.5; a bi-encoder's (cos + 1) / 2 at 0.75, the embedding verifier's."""
    assert Network(design, tiny_bert, seed=0).threshold == cut


def test_the_bi_encoders_loss_is_infonce_at_its_temperature(tiny_bert):
    """Each claim against its window, the batch's other windows and the hard negatives: cross-entropy of the
    cosines divided by tau (0.05) with the own window as the target, worked out from the pooled vectors."""
    import torch

    net = Network("bi_encoder", tiny_bert, tau=0.05, seed=0)
    batch = pd.DataFrame({"claim": ["aspirin reduced risk", "statins lower ldl"],
                          "window": ["aspirin reduced heart attack risk", "statins lower ldl in men"],
                          "hard": ["aspirin does not inhibit cox", ""], "label": [1, 1]})
    net.model.eval()  # no dropout: the two computations see the same vectors
    with torch.no_grad():
        loss = float(net._loss(batch, None))
        c = net._pool(batch["claim"].tolist())
        w = net._pool(batch["window"].tolist() + ["aspirin does not inhibit cox"])
        cos = (c @ w.T).numpy()
    logits = cos / 0.05
    expected = np.mean([np.log(np.exp(logits[i]).sum()) - logits[i, i] for i in range(2)])
    assert loss == pytest.approx(expected, rel=1e-5)


def test_the_cross_encoders_class_weights_are_balanced(tiny_bert):
    """Three supported units and one unsupported: weights n / (2 n_c) = 4 / 2 = 2 for the unsupported class and
    4 / 6 for the supported one (the loss each step is given them)."""
    net = Network("cross_encoder", tiny_bert, batch_size=2, seed=0)
    seen, loss = [], net._loss
    net._loss = lambda batch, weight: seen.append(weight) or loss(batch, weight)
    units = pd.DataFrame({"claim": ["aspirin reduced risk"] * 4, "window": ["aspirin reduced heart attack risk",
                                                                           "statins lower ldl", "aspirin men", "coffee"],
                          "label": [1, 1, 1, 0]})
    net.fit(units, 4)
    assert len(seen) == 2 and all(w.tolist() == pytest.approx([2.0, 4 / 6]) for w in seen)


def test_the_learning_rate_warms_up_then_falls_linearly():
    """20 steps, warm-up 10%: w = 2 steps at (s + 1) / 2 of the rate, then (20 - s) / 18 down to 1/18."""
    import torch

    from citebound.study.train_networks import _schedule

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = _schedule(opt, 20)
    lrs = []
    for _ in range(20):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs == pytest.approx([0.5, 1.0] + [(20 - s) / 18 for s in range(2, 20)])


def test_examples_are_each_seen_once_before_any_repeats_and_a_last_partial_batch_counts(tiny_bert):
    """5 distinct units, 7 examples at batch size 2: steps of 2, 2, 2 and 1 (ceil(7 / 2) = 4), the first 5 examples a
    permutation of the 5 units, then 2 more from the next pass; the curve counts 2, 4, 6, 7."""
    net = Network("cross_encoder", tiny_bert, batch_size=2, max_length=32, seed=3)
    seen, loss = [], net._loss
    net._loss = lambda batch, weight: seen.append(batch["window"].tolist()) or loss(batch, weight)
    units = pd.DataFrame({"claim": ["aspirin reduced risk"] * 5,
                          "window": ["aspirin men", "statins lower ldl", "coffee", "fever in men", "the library budget"],
                          "label": [1, 0, 1, 0, 1]})
    net.fit(units, 7)
    flat = [w for b in seen for w in b]
    assert [len(b) for b in seen] == [2, 2, 2, 1] and [c["examples"] for c in net.curve] == [2, 4, 6, 7]
    assert sorted(flat[:5]) == sorted(units["window"]) and len(set(flat[5:])) == 2


def test_a_networks_unit_at_exactly_its_threshold_is_supported(tiny_bert):
    net = Network("cross_encoder", tiny_bert, max_length=32, seed=0)
    claims, windows = ["aspirin reduced risk", "statins lower ldl"], ["aspirin men", "coffee"]
    s, _ = net.judge(claims, windows)
    net.threshold = float(s[0])
    s2, v = net.judge(claims, windows)
    assert s2[0] == s[0] and bool(v[0]) and bool(v[1]) is bool(s[1] >= s[0])


def test_the_best_window_holds_most_of_the_claims_terms_not_the_window_most_of_whose_terms_are_the_claims():
    """Windows of 40 characters: the first holds only "aspirin" (1 of the claim's 5 terms, though every term of
    the window is the claim's), the second all 5 among other words (5 of 5): the second is best."""
    claim = "aspirin reduced heart attack risk"
    first = ("aspirin " * 5)[:40]
    second = "aspirin reduced heart attack risk coffee"
    assert len(first) == len(second) == 40
    assert best_window_text(claim, first + second, 40, 40) == second


def test_the_cross_encoder_reads_the_claim_then_the_window_in_training_and_in_judging(tiny_bert):
    """The pair goes in as (claim, window): ``judge`` gives the model's softmax on that order (not on the
    window first), and the loss is the cross-entropy of that order's logits."""
    import torch

    net = Network("cross_encoder", tiny_bert, max_length=32, seed=0)
    with torch.no_grad():
        net.model.classifier.weight.mul_(300)  # a random head scores near 0.5: spread it so the orders differ
    claims, windows = ["aspirin reduced risk", "statins lower ldl heart"], ["coffee men", "aspirin"]
    s, _ = net.judge(claims, windows)

    def prob(a, b):
        with torch.inference_mode():
            return torch.softmax(net.model(**net.tokenizer(a, b, return_tensors="pt")).logits, -1)[0, 1].item()

    for k in range(2):
        right, swapped = prob(claims[k], windows[k]), prob(windows[k], claims[k])
        assert abs(right - swapped) > 1e-5 and abs(s[k] - right) < abs(right - swapped) / 20
    batch = pd.DataFrame({"claim": claims, "window": windows, "label": [1, 0]})
    with torch.inference_mode():
        loss = float(net._loss(batch, None))
    by_hand = -(np.log(prob(claims[0], windows[0])) + np.log(1 - prob(claims[1], windows[1]))) / 2
    assert loss == pytest.approx(by_hand, rel=1e-4)



@pytest.mark.parametrize("design,keep", [("cross_encoder", 26), ("bi_encoder", 30)])
def test_texts_past_max_length_are_cut_to_it_in_training_and_judging(tiny_bert, design, keep):
    """A 700-word window (past max_length 32 and BERT's 512 positions) trains and is judged as its first words:
    30 alone ([CLS] and [SEP] around them), 26 beside a 3-word claim ([CLS] claim [SEP] window [SEP])."""
    words = (WORDS * 40)[:700]
    long = " ".join(words)
    net = Network(design, tiny_bert, batch_size=2, lr=1e-3, max_length=32, seed=7)
    units = pd.DataFrame({"source": ["s1", "s1"], "claim": ["statins lower ldl", "aspirin does not inhibit cox"],
                          "window": [long, "the library budget"], "label": [1, 0], "hard": ["the library budget", ""]})
    net.fit(units, 2)
    assert np.isfinite(net.curve[0]["loss"])
    s_long, _ = net.judge(["statins lower ldl"], [long])
    s_cut, _ = net.judge(["statins lower ldl"], [" ".join(words[:keep])])
    s_more, _ = net.judge(["statins lower ldl"], [" ".join(words[:keep + 1])])
    assert s_long[0] == s_cut[0] == s_more[0]  # the same tokens, bit for bit
    s_less, _ = net.judge(["statins lower ldl"], [" ".join(words[:keep - 1])])
    assert s_less[0] != s_cut[0]  # one word fewer is seen


@pytest.mark.parametrize("design,n,labels", [("cross_encoder", 10, [0] * 6 + [1] * 4), ("bi_encoder", 4, [1] * 4)])
def test_the_cross_encoder_trains_on_every_pair_and_the_bi_encoder_on_supported_ones(tiny_bert, monkeypatch,
                                                                                      design, n, labels):
    """The toy pool has 10 pairs, 4 supported: one pass over them draws each exactly once. The cross-encoder's
    classes are weighted by total / (2 x count): 10/12 for the 6 unsupported, 10/8 for the 4 supported."""
    import torch

    seen, weights = [], []
    real = Network._loss

    def recording(self, batch, class_weight):
        seen.extend(batch["label"].tolist())
        weights.append(class_weight)
        return real(self, batch, class_weight)

    monkeypatch.setattr(Network, "_loss", recording)
    units = training_units(toy_pool(), WIN)
    Network(design, tiny_bert, batch_size=3, lr=1e-3, max_length=32, seed=7).fit(units, n)
    assert sorted(seen) == labels
    if design == "cross_encoder":
        assert all(torch.allclose(w, torch.tensor([10 / 12, 10 / 8])) for w in weights)
    else:
        assert weights == [None, None]


def test_training_and_scoring_show_a_bar_only_when_asked(tiny_bert, capsys):
    net = Network("cross_encoder", tiny_bert, batch_size=2, lr=1e-3, max_length=32, seed=7)
    units = training_units(toy_pool(), WIN)
    capsys.readouterr()  # (loading the weights shows transformers' own bar)
    net.fit(units, 2)
    net.pair_scores(["statins lower ldl"], ["statins lower ldl in men"], WIN)
    assert capsys.readouterr().err == ""
    net.fit(units, 2, progress=True)
    assert "train[cross_encoder]" in capsys.readouterr().err


def test_a_model_is_saved_into_a_new_nested_folder_and_again_over_itself(tiny_bert, tmp_path):
    net = Network("cross_encoder", tiny_bert, batch_size=2, lr=1e-3, max_length=32, seed=7)
    out = tmp_path / "a" / "b" / "m"
    net.save(out, {"encoder": "tiny"})
    net.save(out, {"encoder": "tiny", "again": True})
    assert json.loads((out / "citebound.json").read_text())["again"] is True


def test_training_units_keep_the_pairs_columns_and_add_the_window_and_hard_negative():
    u = training_units(toy_pool(), WIN)
    assert list(u.columns) == ["source", "claim", "evidence", "label", "window", "hard"]
    assert u.index.tolist() == list(range(10))
