"""Re-attribution's ranking and overlap strata by hand (#56, round 87): a candidate without a score ranks last, and
a sentence's overlap is that of its best-overlapping gold passage (identical texts overlap 1, disjoint ones 0)."""
import numpy as np
import pandas as pd
import pytest

from citebound.study.analysis.reattribution import rank_hits, reattribution_tables

SAME, OTHER = "statins lower cholesterol", "mitochondria produce energy"


def test_a_candidate_without_a_score_ranks_last():
    # sentence 0: the gold candidate scores 0.2, a distractor has no score; sentence 1: gold has no score
    df = pd.DataFrame({"sentence_id": [0, 0, 1, 1], "label": [1, 0, 1, 0], "s": [0.2, np.nan, np.nan, 0.1]})
    h = rank_hits(df, "s", [1, 2]).set_index("sentence_id")
    assert h["hit@1"].tolist() == [True, False]
    assert h["hit@2"].tolist() == [True, True]
    assert h["n_candidates"].tolist() == [2, 2] and h["n_gold"].tolist() == [1, 1]


def test_a_sentences_stratum_is_its_best_gold_passages_overlap():
    # sentence 0 has two gold passages, one identical to its claim (overlap 1) and one disjoint (0): its overlap
    # is 1. Overlaps by sentence: 1, 0, 1, 1. Halves by rank (ties in order): {1, 0} then {2, 3}.
    rows = [(0, SAME, SAME, 1, 0.9), (0, SAME, OTHER, 1, 0.1), (0, SAME, OTHER, 0, 0.5),
            (1, SAME, OTHER, 1, 0.2), (1, SAME, OTHER, 0, 0.8),
            (2, SAME, SAME, 1, 0.7), (2, SAME, OTHER, 0, 0.6),
            (3, SAME, SAME, 1, 0.3), (3, SAME, OTHER, 0, 0.4)]
    df = pd.DataFrame(rows, columns=["sentence_id", "claim", "passage", "label", "score"])
    t = reattribution_tables(df, {"r": "score"}, [1], seed=0)
    halves = t["strata"][t["strata"].scheme == "halves"].set_index("stratum")
    # hit@1: sentence 0 yes (0.9 is gold), 1 no (0.8 is not), 2 yes, 3 no
    assert halves.loc["Q1/2", ["n_sentences", "mean_jaccard", "recall@1"]].tolist() == [2, pytest.approx(0.5), 0.5]
    assert halves.loc["Q2/2", ["n_sentences", "mean_jaccard", "recall@1"]].tolist() == [2, pytest.approx(1.0), 0.5]
    quart = t["strata"][t["strata"].scheme == "quartiles"].set_index("stratum")
    # quartiles by rank: sentence 1 (0), sentence 0 (1), 2 (1), 3 (1)
    assert quart["mean_jaccard"].tolist() == pytest.approx([0.0, 1.0, 1.0, 1.0])
    assert quart["recall@1"].tolist() == [0.0, 1.0, 1.0, 0.0]
    rec = t["recall"].set_index("ranker")
    assert rec.loc["r", "recall"] == 0.5 and rec.loc["r", "n_sentences"] == 4


def test_a_stratum_no_sentence_falls_in_is_left_out_not_reported_empty():
    """Three sentences in quartiles: ranks 1, 2, 3 against quartile edges 1, 1.5, 2, 2.5, 3 fall in Q1, Q2 and Q4;
    Q3 holds none and has no row (not a row of 0 sentences with a recall of nothing)."""
    rows = [(0, SAME, SAME, 1, 0.9), (0, SAME, OTHER, 0, 0.5),
            (1, SAME, OTHER, 1, 0.2), (1, SAME, OTHER, 0, 0.8),
            (2, SAME, SAME, 1, 0.7), (2, SAME, OTHER, 0, 0.6)]
    df = pd.DataFrame(rows, columns=["sentence_id", "claim", "passage", "label", "score"])
    t = reattribution_tables(df, {"r": "score"}, [1], seed=0)
    quart = t["strata"][t["strata"].scheme == "quartiles"]
    assert quart["stratum"].astype(str).tolist() == ["Q1/4", "Q2/4", "Q4/4"]
    assert quart["n_sentences"].tolist() == [1, 1, 1]
