"""The study's score tables, joined to their pairs by id (never by row), a pair without a score failing closed
(no score, not supported, no window), each set with its own score files, and the agreement sample drawn the same
whatever order its inputs come in. Expected values are written by hand from the tables below."""
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from citebound.study.analysis.agreement import agreement_sample
from citebound.study.scored_tables import load_scored, read_pair_scores, score_table
from citebound.study.workflow_helpers import scored_sets
from citebound.verifiers.base import PairScores


def scores(path, verifier, ids, score, verdict, best=None):
    n = len(ids)
    ps = PairScores(np.array(score, float), np.array(verdict, bool), np.array(best or [0] * n), np.ones(n, int), [""] * n)
    score_table(ids, verifier, ps, binary=False).to_parquet(path)
    return str(path)


def test_scores_join_their_pairs_by_id_and_a_missing_pair_fails_closed(tmp_path):
    pd.DataFrame({"pair_id": ["p0", "p1", "p2"], "label": [1, 0, 1]}).to_parquet(tmp_path / "pairs.parquet")
    # the table is in another order than the pairs, lacks p1, and holds a pair the set does not have
    lex = scores(tmp_path / "first.parquet", "lexical", ["p2", "zz", "p0"], [0.1, 0.5, 0.9], [False, True, True])
    emb = scores(tmp_path / "second.parquet", "embedding", ["p1", "p0", "p2"], [0.3, 0.2, 0.7], [False, False, True])
    out = load_scored(tmp_path / "pairs.parquet", [lex, emb])
    assert out["score_lexical"].tolist()[0::2] == [0.9, 0.1] and np.isnan(out["score_lexical"].iloc[1])
    assert out["verdict_lexical"].tolist() == [True, False, False]  # p1 has no verdict: not supported
    assert out["score_embedding"].tolist() == [0.2, 0.3, 0.7] and out["verdict_embedding"].tolist() == [False, False, True]
    assert "score_first" not in out.columns  # named after the verifier the table holds, not its file


def test_read_pair_scores_aligns_to_the_ids_asked_for(tmp_path):
    path = scores(tmp_path / "t.parquet", "nli", ["b", "a"], [0.8, 0.4], [True, False], best=[2, 0])
    name, ps = read_pair_scores(["a", "missing", "b"], path)
    assert name == "nli"
    assert ps.score[[0, 2]].tolist() == [0.4, 0.8] and np.isnan(ps.score[1])
    assert ps.verdict.tolist() == [False, False, True]
    assert ps.best_window.tolist() == [0, -1, 2]  # window 0 is a real window: a missing pair has none (-1)
    assert ps.n_windows.tolist() == [1, 0, 1] and ps.reason == ["", "missing_score", ""]


def test_each_set_gets_its_own_score_files(tmp_path):
    """Two sets, two verifiers each, files grouped per set: set B's pairs get set B's scores for both verifiers."""
    files = []
    values = {("A", "x"): [0.1, 0.11], ("A", "y"): [0.2, 0.21], ("B", "x"): [0.5, 0.51], ("B", "y"): [0.6, 0.61]}
    for s in ("A", "B"):
        pd.DataFrame({"pair_id": [f"{s}1", f"{s}2"]}).to_parquet(tmp_path / f"{s}.parquet")
        for v in ("x", "y"):
            files.append(scores(tmp_path / f"{s}_{v}.parquet", v, [f"{s}1", f"{s}2"], values[s, v], [True, False]))
    sm = SimpleNamespace(params=SimpleNamespace(settings=json.dumps({"sets": {"src": ["A", "B"]}})),
                         input=SimpleNamespace(src_pairs=[str(tmp_path / "A.parquet"), str(tmp_path / "B.parquet")],
                                               src_scores=files))
    out = scored_sets(sm, "src")
    assert out["A"]["score_x"].tolist() == [0.1, 0.11] and out["A"]["score_y"].tolist() == [0.2, 0.21]
    assert out["B"]["score_x"].tolist() == [0.5, 0.51] and out["B"]["score_y"].tolist() == [0.6, 0.61]


def test_the_agreement_sample_is_the_same_whatever_order_its_inputs_come_in():
    a = pd.DataFrame({"pair_id": ["a3", "a1", "a2"], "v": [3, 1, 2]})
    b = pd.DataFrame({"pair_id": ["b2", "b1"], "v": [5, 4]})
    one = agreement_sample({"srcA": a, "srcB": b}, 3, seed=4)
    two = agreement_sample({"srcB": b.iloc[::-1], "srcA": a.sample(frac=1, random_state=1)}, 3, seed=4)
    assert one[["source", "pair_id"]].values.tolist() == two[["source", "pair_id"]].values.tolist()
    # drawn from the rows sorted by (source, pair_id), kept in that order
    order = [("srcA", "a1"), ("srcA", "a2"), ("srcA", "a3"), ("srcB", "b1"), ("srcB", "b2")]
    take = np.sort(np.random.default_rng(4).choice(5, size=3, replace=False))
    assert [tuple(r) for r in one[["source", "pair_id"]].values] == [order[i] for i in take]
    # the pairs' own columns and their source, nothing added (no old row number), labelled 0 to 2
    assert list(one.columns) == ["pair_id", "v", "source"] and one.index.tolist() == [0, 1, 2]


@pytest.mark.parametrize("n", [5, 6, 50])
def test_a_sample_as_large_as_the_pairs_holds_each_pair_once(n):
    a = pd.DataFrame({"pair_id": ["a1", "a2", "a3"]})
    b = pd.DataFrame({"pair_id": ["b1", "b2"]})
    got = agreement_sample({"A": a, "B": b}, n, seed=0)
    assert got["pair_id"].tolist() == ["a1", "a2", "a3", "b1", "b2"]


def test_a_sample_smaller_than_the_pairs_holds_distinct_pairs():
    df = pd.DataFrame({"pair_id": [f"p{i:02d}" for i in range(40)]})
    for seed in range(20):
        got = agreement_sample({"s": df}, 30, seed=seed)["pair_id"]
        assert len(got) == 30 and got.is_unique
