"""Rule train_contradiction's numbers against what is worked out here: each pair's training window, the sources a
left-out head is fitted on, the selection table's counts, AUCs and vetoed share, the strength chosen by its mean
gain, the held-out catch rate with its calibration half and its Clopper-Pearson interval (scipy's beta), and the
adoption rule at its edges."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from citebound.study import contradiction as S
from citebound.training import contradiction as K
from tests.guard.test_contradiction_numbers import counted_auc

F = len(K.FEATURES)
COS = K.FEATURES.index("cos_l6")


def test_a_pairs_training_window_is_its_most_similar_the_first_of_ties():
    units = np.arange(6 * F, dtype=float).reshape(6, F)  # every row different
    units[:, COS] = [0.2, 0.7, 0.7, 0.1, -0.3, 0.5]
    owner = np.array([0, 0, 0, 2, 2, 2])  # pair 1 has no window
    got = S._best_window(units, owner, 3)
    assert got[0].tolist() == units[1].tolist()  # 0.7 twice: the first
    assert got[1].tolist() == [0.0] * F
    assert got[2].tolist() == units[5].tolist()


def synthetic(seed=0):
    """Seven pairs per refute source (3 support, 3 refute, 1 not-enough-information), 1 to 3 windows each."""
    rng = np.random.default_rng(seed)
    rows, units, owner = [], [], []
    for s in K.REFUTE_SOURCES:
        for kind in ["support"] * 3 + ["refute"] * 3 + ["nei"]:
            p = len(rows)
            rows.append({"source": s, "kind": kind})
            for _ in range(1 + p % 3):
                u = rng.normal(size=F)
                u[COS] = rng.uniform(-1, 1)
                units.append(u)
                owner.append(p)
    return pd.DataFrame(rows), np.array(units), np.array(owner)


@pytest.fixture(scope="module")
def selection():
    train, units, owner = synthetic()
    fits = []
    real_fit = K.fit

    def recording_fit(x, y, c):
        head = real_fit(x, y, c)
        fits.append((x.copy(), y.copy(), c, head))
        return head

    K.fit = recording_fit
    try:
        table, best = S.loso(train, units, owner, [0.01, 1.0, 100.0], 0.5, 20, 0)
    finally:
        K.fit = real_fit
    return train, units, owner, table, best, fits


def test_each_left_out_head_is_fitted_on_the_other_sources_support_and_refute_pairs(selection):
    train, units, owner, _, _, fits = selection
    inst = S._best_window(units, owner, len(train))
    assert len(fits) == 3 * len(K.REFUTE_SOURCES)
    for c in (0.01, 1.0, 100.0):
        left_out = []
        for x, y, _, _ in (f for f in fits if f[2] == c):
            rows = [next(i for i in range(len(train)) if np.array_equal(inst[i], r)) for r in x]
            assert set(train.kind[rows]) == {"support", "refute"}
            assert y.tolist() == (train.kind[rows] == "support").astype(int).tolist()
            sources = set(train.source[rows])
            assert len(sources) == len(K.REFUTE_SOURCES) - 1
            missing = (set(K.REFUTE_SOURCES) - sources).pop()
            # every support and refute pair of the other four, and nothing else
            want = train.index[(train.source != missing) & train.kind.isin(["support", "refute"])].tolist()
            assert sorted(rows) == want
            left_out.append(missing)
        assert sorted(left_out) == sorted(K.REFUTE_SOURCES)


def test_the_selection_rows_by_hand(selection):
    """On each left-out source, pair scores are the best window's (embedding (cos + 1) / 2; with the veto, minus 1
    where the head's P(support) < 0.5), computed here window by window."""
    train, units, owner, table, _, fits = selection
    for x, _, c, head in fits:
        rows = {next(i for i in range(len(train)) if np.array_equal(S._best_window(units, owner, len(train))[i], r))
                for r in x}
        held = (set(K.REFUTE_SOURCES) - set(train.source[sorted(rows)])).pop()
        here = train.index[train.source == held].tolist()
        emb, comb = {}, {}
        for p in here:
            ws = units[owner == p]
            e = [(w[COS] + 1) / 2 for w in ws]
            z = [sum((w[j] - head["mean"][j]) / head["scale"][j] * head["coef"][j] for j in range(F))
                 + head["intercept"] for w in ws]
            v = [ei - (1.0 if 1 / (1 + np.exp(-zi)) < 0.5 else 0.0) for ei, zi in zip(e, z)]
            emb[p], comb[p] = max(e), max(v)
        sup = [p for p in here if train.kind[p] == "support"]
        for comparison, others in (("support vs refute", [p for p in here if train.kind[p] == "refute"]),
                                   ("support vs all unsupported", [p for p in here if train.kind[p] != "support"])):
            row = table[(table.C == c) & (table.evaluation == f"loso:{held}") & (table.comparison == comparison)]
            assert len(row) == 1
            row = row.iloc[0]
            assert (row.n_support, row.n_other) == (len(sup), len(others))
            assert row.embedding_auc == pytest.approx(counted_auc([emb[p] for p in sup], [emb[p] for p in others]))
            assert row.check_auc == pytest.approx(counted_auc([comb[p] for p in sup], [comb[p] for p in others]))
            assert row.vetoed_support == pytest.approx(np.mean([comb[p] < emb[p] for p in sup]))


def test_the_strength_chosen_has_the_best_mean_gain_over_left_out_sources(selection):
    table = selection[3]
    sr = table[table.comparison == "support vs refute"]
    mean = {c: np.mean(sr.gain[sr.C == c]) for c in (0.01, 1.0, 100.0)}
    best_source = {c: max(sr.gain[sr.C == c]) for c in (0.01, 1.0, 100.0)}
    want = max(mean, key=mean.get)
    assert selection[4] == want
    assert max(best_source, key=best_source.get) != want  # the data tell the mean from the best source apart


def scored_gold():
    """Eight answers of three citations each (scores all different; the veto's are the embedding's less 0.001),
    and six SciFact pairs."""
    rng = np.random.default_rng(5)
    items = np.repeat(np.arange(8), 3)
    y = np.array([0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1])
    emb = rng.permutation(np.linspace(0.05, 0.95, 24)) + 0.3 * y
    sf_y = np.array([0, 1, 0, 1, 0, 1])
    sf = np.array([0.2, 0.9, 0.6, 0.4, 0.35, 0.8])
    return items, {"attribution_gold_eval": (emb, emb - 0.001, y), "scifact_dev": (sf, sf - 0.001, sf_y)}


def test_the_held_out_catch_rate_with_its_calibration_half_and_cp_interval():
    import citebound.calibration.conformal as conformal

    items, scored = scored_gold()
    calls = []
    real = conformal.conformal_threshold

    def recording(scores, alpha):
        tau = real(scores, alpha)
        calls.append((np.asarray(scores, float).copy(), tau))
        return tau

    conformal.conformal_threshold = recording
    try:
        out = S.catch_rows(scored, items, alpha=0.2, seed=3, splits=4).set_index("verifier")
    finally:
        conformal.conformal_threshold = real
    assert len(calls) == 8
    for name, k in (("embedding", 0), ("embedding+contradiction", 1)):
        s_a, y_a = scored["attribution_gold_eval"][k], scored["attribution_gold_eval"][2]
        s_s, y_s = scored["scifact_dev"][k], scored["scifact_dev"][2]
        caught = total = 0
        kept, sf_caught, sf_kept = [], [], []
        mine = [(cal, tau) for cal, tau in calls if all(np.isclose(s_a, v).any() for v in cal)]
        assert len(mine) == 4
        for cal, tau in mine:
            calib = {int(items[np.flatnonzero(np.isclose(s_a, v))[0]]) for v in cal}
            # the calibration set is every unsupported citation of four answers, and nothing else
            assert len(calib) == 4
            assert sorted(cal) == sorted(s_a[np.isin(items, list(calib)) & (y_a == 0)])
            test = ~np.isin(items, list(calib))
            caught += int(sum(s <= tau for s in s_a[test & (y_a == 0)]))
            total += int((test & (y_a == 0)).sum())
            kept.append(np.mean(s_a[test & (y_a == 1)] > tau))
            sf_caught.append(np.mean(s_s[y_s == 0] <= tau))
            sf_kept.append(np.mean(s_s[y_s == 1] > tau))
        row = out.loc[name]
        assert row.held_out_catch == pytest.approx(caught / total)
        lo = 0.0 if caught == 0 else beta.ppf(0.025, caught, total - caught + 1)
        hi = 1.0 if caught == total else beta.ppf(0.975, caught + 1, total - caught)
        assert (row.catch_ci_low, row.catch_ci_high) == (pytest.approx(lo), pytest.approx(hi))
        assert row.keeps_guarantee == (hi >= 0.8)
        assert row.held_out_supported_kept == pytest.approx(np.mean(kept))
        assert row.scifact_contradictions_caught == pytest.approx(np.mean(sf_caught))
        assert row.scifact_supported_kept == pytest.approx(np.mean(sf_kept))


def adoption(gains, sf_gain, keeps, cost):
    rows = [{"C": 1.0, "evaluation": f"loso:{s}", "comparison": "support vs refute", "gain": g}
            for s, g in zip(K.REFUTE_SOURCES, gains)]
    rows += [{"C": 1.0, "evaluation": "loso:scitab", "comparison": "support vs all unsupported", "gain": -5.0},
             {"C": 0.1, "evaluation": "loso:scitab", "comparison": "support vs refute", "gain": -5.0},
             {"C": 1.0, "evaluation": "scifact_dev", "comparison": "support vs contradict", "gain": sf_gain}]
    catch = pd.DataFrame([{"verifier": "embedding", "keeps_guarantee": True},
                          {"verifier": "embedding+contradiction", "keeps_guarantee": keeps}])
    return S.decide(pd.DataFrame(rows), catch, cost, 1.0)


def test_the_adoption_rule_at_its_edges():
    # the mean left-out gain counts only C = 1.0's support-vs-refute rows: (0.3 + 0.1 + 0.1 + 0 + 0) / 5 = 0.1
    d = adoption([0.3, 0.1, 0.1, 0.0, 0.0], 0.1, True, 1.5)
    assert d["loso_mean_gain"] == pytest.approx(0.1) and d["adopted"] and all(d["checks"].values())
    assert not adoption([0.3, 0.1, 0.1, 0.0, -0.01], 0.1, True, 1.5)["checks"]["loso_mean_gain"]
    assert not adoption([0.3, 0.1, 0.1, 0.0, 0.0], 0.099, True, 1.5)["adopted"]
    assert not adoption([0.3, 0.1, 0.1, 0.0, 0.0], 0.1, False, 1.5)["adopted"]
    assert not adoption([0.3, 0.1, 0.1, 0.0, 0.0], 0.1, True, 1.51)["checks"]["cost"]
    unmeasured = adoption([0.3, 0.1, 0.1, 0.0, 0.0], 0.1, True, None)  # a cost not measured is not a pass
    assert unmeasured["checks"] == {"loso_mean_gain": True, "scifact_gain": True, "catch_guarantee_kept": True,
                                    "cost": False} and not unmeasured["adopted"]
