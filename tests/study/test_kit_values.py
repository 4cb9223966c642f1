"""The kit's cell rows where a plausible slip keeps the pinned tables: an empty answer is an answer (not a failed
call), and the paired difference is over the items both cells answered. Expected values by hand."""
import numpy as np
import pandas as pd
import pytest

from citebound.study import kit


def test_an_empty_answer_is_scored_and_only_a_failed_call_is_an_error():
    gens = [{"id": "a", "output": "Alpha beta [1]. Gamma delta.", "ctxs": [{"text": "p"}]},
            {"id": "b", "output": "", "ctxs": [{"text": "p"}]},
            {"id": "c", "output": None, "error": "timeout", "ctxs": []}]
    refs = {"a": "alpha gamma", "b": "alpha", "c": "alpha"}
    t = kit.cell_items(gens, refs, {"a": {0: True}}, r"a", seed=0).set_index("item_id")
    assert t["error"].tolist() == [False, False, True]
    assert t.loc["b", "n_sentences"] == 0 and t.loc["b", "coverage_answer"] == 0.0
    assert t.loc["a", "coverage_answer"] == pytest.approx(1.0) and t.loc["a", "n_cited"] == 1


def _items(ids, u, c):
    return pd.DataFrame({"item_id": ids, "n_unsupported": u, "n_cited": c})


def test_the_paired_difference_is_over_the_items_both_cells_answered():
    # lit answered 0, 1, 2; bare 1, 2, 3. Shared: 1 and 2. lit there: 1 of 4 + 3 of 4 = 4 of 8 (50%);
    # bare there: 0 of 2 + 1 of 2 = 1 of 4 (25%): +25 pp. Items 0 and 3 (each all unsupported) must not count.
    lit = _items(["0", "1", "2"], [5, 1, 3], [5, 4, 4])
    bare = _items(["1", "2", "3"], [0, 1, 6], [2, 2, 6])
    out = kit.paired_difference(lit, bare, 200, np.random.default_rng(2))
    assert out["n_items"] == 2 and out["difference_pp"] == pytest.approx(25.0)
    idx = np.random.default_rng(2).integers(2, size=(200, 2))
    ua, ca, ub, cb = np.array([1, 3]), np.array([4, 4]), np.array([0, 1]), np.array([2, 2])
    d = [100 * (ua[i].sum() / ca[i].sum() - ub[i].sum() / cb[i].sum()) for i in idx]
    assert (out["difference_pp_ci_low"], out["difference_pp_ci_high"]) == \
        pytest.approx((np.quantile(d, 0.025), np.quantile(d, 0.975)))
