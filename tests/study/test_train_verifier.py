"""The train_verifier selection: the paired AUC bootstrap against an independent loop, leave-one-source-out
and the choice of C recomputed with scikit-learn, the adoption rule by hand, and the frozen features on a
tiny random-weight encoder loaded through from_pretrained."""
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from citebound.study.train_verifier import sample_per_source
from citebound.training.evaluation import choose_and_adopt, evaluate, paired_auc_difference
from citebound.training.head import (
    FEATURES,
    FrozenFeatures,
    apply_head,
    best_window,
    fit_head,
    number_share,
    pair_scores,
)
from citebound.verifiers.base import make_windows
from citebound.verifiers.lexical import term_recall


def test_paired_auc_difference_against_an_independent_loop():
    rng = np.random.default_rng(0)
    y = np.array([1, 0, 1, 0, 1, 0, 1, 1, 0, 0])
    a, b = rng.random(10) + 0.4 * y, rng.random(10)
    clusters = np.array(["p", "p", "q", "q", "r", "r", "s", "s", "t", "t"])
    d, lo, hi = paired_auc_difference(y, a, b, clusters, n_boot=300, seed=4)
    assert d == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b))
    # the same draws: clusters in first-seen order, resampled with replacement, both scores on each resample
    members = {c: np.flatnonzero(clusters == c) for c in dict.fromkeys(clusters)}
    keys = list(members)
    r = np.random.default_rng(4)
    diffs = []
    for _ in range(300):
        idx = np.concatenate([members[keys[k]] for k in r.integers(len(keys), size=len(keys))])
        if 0 < y[idx].sum() < len(idx):
            diffs.append(roc_auc_score(y[idx], a[idx]) - roc_auc_score(y[idx], b[idx]))
    assert (lo, hi) == pytest.approx((np.quantile(diffs, 0.025), np.quantile(diffs, 0.975)))


def test_sample_per_source_caps_each_source():
    pairs = pd.DataFrame({"source": ["a"] * 5 + ["b"] * 2, "claim": list("abcdefg")})
    s = sample_per_source(pairs, 3, seed=1)
    assert s.groupby("source").size().to_dict() == {"a": 3, "b": 2}
    assert s.equals(sample_per_source(pairs, 3, seed=1)) and set(s.claim) <= set(pairs.claim)


def test_sample_per_source_draws_sources_in_name_order_without_replacement():
    """Sources a (6 pairs) and b (5), 4 drawn from each: the seed's first draw is a's, its second b's, whatever
    order the rows come in; each draw holds 4 distinct pairs, in their table order; rows labelled 0 to 7."""
    pairs = pd.DataFrame({"source": ["b"] * 5 + ["a"] * 6, "claim": [f"b{i}" for i in range(5)] + [f"a{i}" for i in range(6)]})
    rng = np.random.default_rng(3)
    want_a = [f"a{i}" for i in np.sort(rng.choice(6, size=4, replace=False))]
    want_b = [f"b{i}" for i in np.sort(rng.choice(5, size=4, replace=False))]
    s = sample_per_source(pairs, 4, seed=3)
    assert s.claim.tolist() == want_a + want_b and s.index.tolist() == list(range(8))
    for seed in range(30):  # never the same pair twice (with replacement, 4 of 5 repeat one in most seeds)
        got = sample_per_source(pairs, 4, seed=seed)
        assert got.claim.is_unique and len(got) == 8


def _synthetic(n_per=40, seed=0):
    rng = np.random.default_rng(seed)
    rows, xs = [], []
    for src, signal in (("s1", 2.0), ("s2", 1.0), ("s3", 0.5)):
        y = rng.integers(0, 2, n_per)
        x = rng.normal(size=(n_per, len(FEATURES)))
        x[:, 0] += signal * y  # a feature that carries the label, more in some sources
        x[:, FEATURES.index("cos_l6")] += 0.3 * y  # the embedding baseline: weaker
        rows.append(pd.DataFrame({"source": src, "label": y}))
        xs.append(x)
    return pd.concat(rows, ignore_index=True), np.vstack(xs)


def test_evaluate_recomputes_loso_and_the_choice_of_c():
    train, x = _synthetic()
    gy = np.array([1, 0] * 15)
    gx = np.random.default_rng(9).normal(size=(30, len(FEATURES)))
    gx[:, 0] += gy
    gold = {"g": (pd.DataFrame({"label": gy, "cluster": np.arange(30) // 2}), (gx, np.arange(30)))}
    grid = [0.01, 1.0]
    table, chosen = evaluate(train, (x, np.arange(len(x))), gold, {"all": ["s1", "s2", "s3"], "two": ["s1", "s2"]},
                             grid, n_boot=50, seed=3)
    y = train["label"].to_numpy()
    means = {}
    for c in grid:
        aucs = []
        for src in ("s1", "s2", "s3"):
            out = (train["source"] == src).to_numpy()
            mu, sd = x[~out].mean(0), x[~out].std(0)
            lr = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit((x[~out] - mu) / sd, y[~out])
            p = lr.decision_function((x[out] - mu) / sd)
            auc = roc_auc_score(y[out], p)
            row = table[(table.variant == "all") & (table.C == c) & (table.evaluation == f"loso:{src}")].iloc[0]
            assert row.auc == pytest.approx(auc)
            assert row.embedding_auc == pytest.approx(roc_auc_score(y[out], x[out][:, FEATURES.index("cos_l6")]))
            aucs.append(auc)
        means[c] = np.mean(aucs)
    assert chosen["all"]["C"] == max(grid, key=lambda c: means[c])
    assert len(table[(table.variant == "two") & table.evaluation.str.startswith("loso:")]) == 2 * len(grid)
    g = table[(table.variant == "all") & (table.evaluation == "g")].iloc[0]
    assert g.auc == pytest.approx(roc_auc_score(gy, apply_head(chosen["all"]["head"], gx)))
    assert g.delta_ci_low <= g.delta <= g.delta_ci_high
    assert (table.evaluation == "in_distribution").sum() == 2


def _table(variant, gold_rows, loso_deltas):
    rows = [{"variant": variant, "C": 1.0, "evaluation": f"loso:{k}", "n": 10, "auc": 0.7 + d, "embedding_auc": 0.7,
             "delta": d, "delta_ci_low": np.nan, "delta_ci_high": np.nan} for k, d in loso_deltas.items()]
    rows += [{"variant": variant, "C": 1.0, "evaluation": name, "n": 10, "auc": 0.6 + d, "embedding_auc": 0.6, "delta": d,
              "delta_ci_low": lo, "delta_ci_high": hi} for name, (d, lo, hi) in gold_rows.items()]
    return pd.DataFrame(rows)


def test_adoption_rule_by_hand():
    chosen = {"v": {"C": 1.0}, "w": {"C": 1.0}}
    ok = _table("v", {"a": (0.05, 0.01, 0.09), "b": (0.08, 0.02, 0.12)}, {"x": 0.0, "y": 0.01})
    worse = _table("w", {"a": (0.01, -0.01, 0.03), "b": (0.02, -0.02, 0.05)}, {"x": 0.0})
    d = choose_and_adopt(pd.concat([ok, worse]), chosen, ["a", "b"], 0.05)
    assert d["variant"] == "v" and d["adopted"] and d["reasons"] == []  # +0.05 exactly is enough; a LOSO tie is no loss
    # a CI that touches 0, a margin just short, and a left-out source lost: each one blocks adoption
    for gold, loso in (({"a": (0.06, 0.0, 0.1), "b": (0.08, 0.02, 0.12)}, {"x": 0.0}),
                       ({"a": (0.0499, 0.01, 0.09), "b": (0.08, 0.02, 0.12)}, {"x": 0.0}),
                       ({"a": (0.06, 0.01, 0.1), "b": (0.08, 0.02, 0.12)}, {"x": -0.001})):
        d = choose_and_adopt(_table("v", gold, loso), {"v": {"C": 1.0}}, ["a", "b"], 0.05)
        assert not d["adopted"] and len(d["reasons"]) == 1, d


def test_fit_head_standardises_and_apply_head_matches_sklearn():
    train, x = _synthetic(seed=2)
    y = train["label"].to_numpy()
    head = fit_head(x, y, 0.5)
    mu, sd = x.mean(0), x.std(0)
    lr = LogisticRegression(C=0.5, max_iter=2000, class_weight="balanced").fit((x - mu) / sd, y)
    assert apply_head(head, x) == pytest.approx(lr.predict_proba((x - mu) / sd)[:, 1], abs=1e-9)


def test_frozen_features_on_a_tiny_encoder(tmp_path):
    """The feature extractor through from_pretrained on a random-weight BERT: shapes, ranges, the best
    window by layer-6 cosine, and the text-only features by hand."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = "the a aspirin does not inhibit cox 44 percent men heart attack reduced risk by in".split()
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]")
    from tokenizers.processors import TemplateProcessing
    fast._tokenizer.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast.save_pretrained(tmp_path)
    import torch
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=6, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(tmp_path)
    ff = FrozenFeatures(str(tmp_path), batch_size=4)
    claims = ["aspirin reduced heart attack risk by 44 percent", "aspirin does not inhibit cox"]
    passages = ["in men aspirin reduced risk by 44 percent " + "the " * 200, "aspirin does inhibit cox"]
    units, owner = ff.pair_units(claims, passages, window_chars=300, stride=150)
    ws = make_windows(passages[0], 300, 150)
    assert len(ws) > 2 and list(owner) == [0] * len(ws) + [1]
    assert units.shape == (len(ws) + 1, len(FEATURES))
    cos = units[:, [FEATURES.index(f) for f in ("cos_l2", "cos_l4", "cos_l6", "maxsim")]]
    assert np.all(cos <= 1 + 1e-5) and np.all(cos >= -1 - 1e-5)
    # pair 1 (one window): no number in the claim, a negation on one side only
    assert units[-1, FEATURES.index("numbers")] == 1.0 and units[-1, FEATURES.index("negation")] == 1.0
    assert units[-1, FEATURES.index("term_recall")] == pytest.approx(term_recall(claims[1], passages[1]))
    # units are per window: the same unit alone gives the same features
    alone = ff.unit_features([claims[0]], [ws[1]])
    assert alone[0] == pytest.approx(units[1], abs=1e-5)
    assert units[1, FEATURES.index("numbers")] == number_share(claims[0], ws[1])
    # a pair's training instance is its best window by layer-6 cosine; its score the max over windows
    x = best_window(units, owner, 2)
    best = int(np.argmax(units[:len(ws), FEATURES.index("cos_l6")]))
    assert x[0] == pytest.approx(units[best]) and x[1] == pytest.approx(units[-1])
    head = {"mean": [0.0] * len(FEATURES), "scale": [1.0] * len(FEATURES), "intercept": 0.0,
            "coef": [0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0]}  # term recall alone
    p = 1 / (1 + np.exp(-3.0 * units[:, FEATURES.index("term_recall")]))
    assert pair_scores(head, units, owner, 2) == pytest.approx([p[:len(ws)].max(), p[-1]])


def _gold_parquet(path, rows):
    cols = ["pair_id", "item_id", "claim", "passage", "label", "split"]
    pd.DataFrame(rows, columns=cols).to_parquet(path)
    return str(path)


def test_load_training_adds_the_attribution_golds_fit_split_deduped_against_its_eval_split(tmp_path):
    import json

    from citebound.scoring.io import DataError
    from citebound.study.train_verifier import FIT_SOURCE, load_training

    fever = tmp_path / "train" / "fever_symmetric" / "symmetric_v0.2"
    fever.mkdir(parents=True)
    (fever / "fever_symmetric_dev.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"claim": "Y is old .", "evidence": "Y was built in 1900 .", "label": "SUPPORTS"},
        {"claim": "Eval claim one .", "evidence": "E .", "label": "REFUTES"}]) + "\n")
    (fever / "fever_symmetric_test.jsonl").write_text("")
    attr = _gold_parquet(tmp_path / "attr.parquet", [
        ["a1", "q1", "Fit claim.", "passage A", 1, "fit"],
        ["a2", "q1", "Fit claim.", "passage B", 0, "fit"],
        ["a3", "q2", "Eval claim one.", "passage C", 1, "fit"],  # a fit pair whose claim is an eval claim
        ["a4", "q3", "Eval claim one.", "passage D", 1, "eval"],
        ["a5", "q3", "Eval claim two.", "passage E", 0, "eval"],
        ["a6", "q3", "Unlabelled.", "passage F", None, "fit"]])
    sci = _gold_parquet(tmp_path / "sci.parquet", [["s1", "d1", "SciFact claim.", "abstract", 1, "test"],
                                                   ["s2", "d2", "SciFact claim 2.", "abstract", 0, "test"]])
    cfg = {"train_verifier": {"sources": ["fever_symmetric", FIT_SOURCE], "max_pairs_per_source": 10, "seed": 1},
           "files": {"f": {"path": "train/fever_symmetric/symmetric_v0.2/fever_symmetric_dev.jsonl"}},
           "dedupe_sets": ["gold/attr", "gold/sci"], "calibration_set": "gold/attr", "validation_set": "gold/sci"}
    data = load_training([str(fever / "fever_symmetric_dev.jsonl")], [attr, sci], cfg)
    t = data["train"]
    # fever: "Eval claim one ." matches an eval claim and goes; the fit split keeps its two labelled pairs of
    # "Fit claim." (the unlabelled one is not a pair, the one matching an eval claim is removed)
    assert sorted(t.loc[t.source == "fever_symmetric", "claim"]) == ["Y is old."]
    fit = t[t.source == FIT_SOURCE].sort_values("pair_id")
    assert list(fit.pair_id) == [f"{FIT_SOURCE}:a1", f"{FIT_SOURCE}:a2"]
    assert list(fit.evidence) == ["passage A", "passage B"] and list(fit.label) == [1, 0]
    assert set(fit.domain) == {"scholarly"}
    assert data["read"] == 2 + 3 and data["kept"] == 3
    removed = data["removed"].set_index(["eval_set", "source"])["removed"]
    assert removed["gold/attr", "fever_symmetric"] == 1 and removed["gold/attr", FIT_SOURCE] == 1
    assert removed.sum() == 2
    # the gold the designs are judged on: the attribution gold's eval split only, and SciFact
    assert sorted(data["gold"]["attribution_gold_eval"]["pair_id"]) == ["a4", "a5"]
    assert len(data["gold"]["scifact_dev"]) == 2
    # the bootstrap resamples answers (item_id), not pairs: q3's two pairs are one cluster
    assert data["gold"]["attribution_gold_eval"]["cluster"].tolist() == ["q3", "q3"]
    assert data["gold"]["scifact_dev"]["cluster"].tolist() == ["d1", "d2"]
    # the staged sources' pairs first, then the fit split's, labelled 0 to 2; the gold keeps its own columns
    assert t.source.tolist() == ["fever_symmetric", FIT_SOURCE, FIT_SOURCE] and t.index.tolist() == [0, 1, 2]
    assert list(t.columns) == ["source", "domain", "pair_id", "claim", "evidence", "label", "kind"]  # none added
    assert list(data["gold"]["attribution_gold_eval"].columns) == ["pair_id", "item_id", "claim", "passage",
                                                                   "label", "split", "cluster"]
    assert data["gold"]["attribution_gold_eval"].index.tolist() == [0, 1]
    # without a fit split the source is a clear error naming the set
    nofit = _gold_parquet(tmp_path / "nofit.parquet", [["a4", "q3", "Eval claim one.", "passage D", 1, "eval"]])
    with pytest.raises(DataError, match="gold/attr: no 'fit' split"):
        load_training([str(fever / "fever_symmetric_dev.jsonl")], [nofit, sci], cfg)


NO_EVALUATIONS = pd.DataFrame(columns=["variant", "C", "evaluation", "n", "auc", "embedding_auc", "delta",
                                       "delta_ci_low", "delta_ci_high"])
NOT_ADOPTED = {"variant": "all", "C": 0.1, "adopted": False, "reasons": ["x"]}


def test_the_model_card_says_the_attribution_gold_is_deduped_by_its_evaluation_split_only():
    from citebound.study.train_verifier import FIT_SOURCE, model_card

    cfg = {"design": "frozen_head", "encoder": "e", "C": [0.1], "n_bootstrap": 10, "max_pairs_per_source": 5,
           "seed": 1, "sources": ["begin", FIT_SOURCE]}
    counts = pd.DataFrame({"source": [FIT_SOURCE], "domain": ["scholarly"], "pairs": [4], "supported": [1]})
    removed = pd.DataFrame({"eval_set": ["gold/attribution_gold"], "source": [FIT_SOURCE], "removed": [2]})
    table, decision = NO_EVALUATIONS, NOT_ADOPTED
    card = model_card(cfg, counts, removed, {}, table, decision, {}, {FIT_SOURCE: "ODC-BY"})
    assert f"its fit split is the training source {FIT_SOURCE}):" in card
    assert f"| {FIT_SOURCE} | scholarly | 4 | 1 | ODC-BY |" in card
    assert f"| gold/attribution_gold | {FIT_SOURCE} | 2 |" in card
    # without the fit split among the sources, the plain sentence
    plain = model_card({**cfg, "sources": ["begin"]}, counts, removed, {}, table, decision, {}, {})
    assert "were removed first:" in plain and "its fit split" not in plain
    assert "(none matched)" not in card and "Rows the readers could not use: none." in card


def test_the_model_card_says_when_nothing_was_removed_and_names_each_skip():
    from citebound.study.train_verifier import model_card

    cfg = {"design": "frozen_head", "encoder": "e", "C": [0.1], "n_bootstrap": 10, "seed": 1, "sources": ["begin"]}
    counts = pd.DataFrame({"source": ["begin"], "domain": ["general"], "pairs": [4], "supported": [1]})
    removed = pd.DataFrame({"eval_set": ["gold/a", "gold/b"], "source": ["begin", "begin"], "removed": [0, 0]})
    table, decision = NO_EVALUATIONS, NOT_ADOPTED
    skipped = {("fever_symmetric", "no label"): 3, ("begin", "empty claim"): 1}
    card = model_card(cfg, counts, removed, skipped, table, decision, {}, {})
    assert "| (none matched) | | 0 |" in card and "| gold/a |" not in card
    assert "Rows the readers could not use: begin empty claim: 1, fever_symmetric no label: 3." in card
