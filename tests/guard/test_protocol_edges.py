"""The full-passage protocol at its edges, with test_pinned's TableVerifier (a window's score by its first
letter): a window with no score (NaN) beside a scored one, a cached verdict re-read at today's threshold, cache keys that run
claim and window together, a lookup of more than one chunk of keys, and an empty passage."""
import numpy as np
import pytest
from test_pinned import TableVerifier

from citebound.verifiers.base import ScoreCache, score_pairs


def test_a_window_without_a_score_leaves_the_pair_its_scored_window():
    # a 10-character passage in windows of 6 at stride 4: "abcdef" and "efghij" (the last flush with the end)
    v = TableVerifier({"a": np.nan, "e": 0.8, "x": np.nan})
    ps = score_pairs(v, ["c", "d"], ["abcdefghij", "xxxxxxxxxx"], window_chars=6, stride=4, progress=False)
    assert ps.score[0] == 0.8 and ps.best_window[0] == 1 and bool(ps.verdict[0]) and ps.n_windows[0] == 2
    assert np.isnan(ps.score[1]) and ps.best_window[1] == -1 and not ps.verdict[1] and ps.reason[1] == "unscored"


def test_cached_verdicts_are_read_at_the_verifiers_threshold_now(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    ps = score_pairs(TableVerifier({"p": 0.6}, threshold=0.5), ["c"], ["p"], cache=cache, progress=False)
    assert ps.verdict.tolist() == [True] and ps.n_cached == 0
    stricter = TableVerifier({}, threshold=0.7)  # it is never called: the score comes from the cache
    ps = score_pairs(stricter, ["c"], ["p"], cache=cache, progress=False)
    assert ps.n_cached == 1 and ps.score.tolist() == [0.6] and ps.verdict.tolist() == [False] and stricter.calls == []


def test_cache_keys_keep_claim_and_window_apart(tmp_path):
    assert ScoreCache.key("ab", "c") != ScoreCache.key("a", "bc")
    cache = ScoreCache(tmp_path / "c.sqlite")
    v = TableVerifier({"c": 0.9, "b": 0.1})
    assert score_pairs(v, ["ab"], ["c"], cache=cache, progress=False).score.tolist() == [0.9]
    ps = score_pairs(v, ["a"], ["bc"], cache=cache, progress=False)
    assert ps.score.tolist() == [0.1] and ps.n_cached == 0


def test_a_lookup_of_many_keys_finds_every_one(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    items = [(ScoreCache.key(f"c{i}", "w"), i / 1200, i % 2 == 0) for i in range(1201)]  # three chunks of 500
    cache.put_many(items)
    got = cache.get_many([k for k, _, _ in items])
    assert len(got) == 1201 and got[items[1000][0]] == (1000 / 1200, True) and got[items[999][0]] == (999 / 1200, False)


def test_an_empty_passage_scores_zero_and_a_missing_claim_has_no_score():
    v = TableVerifier({})
    ps = score_pairs(v, ["c", "", "c"], ["", "p", "  "], progress=False)
    assert ps.score[0] == 0.0 and ps.reason[0] == "empty_passage" and not ps.verdict[0]
    assert np.isnan(ps.score[1]) and ps.reason[1] == "missing_claim"
    assert ps.score[2] == 0.0 and ps.reason[2] == "empty_passage"
    assert v.calls == [] and ps.n_units == 0


@pytest.mark.parametrize("scores, best", [([0.2, 0.7, 0.7], 1), ([0.9, 0.1, 0.9], 0)])
def test_ties_between_windows_go_to_the_first(scores, best):
    windows = ["abcdef", "efghij", "ijklmn"]  # a 14-character passage at width 6, stride 4
    v = TableVerifier({w[0]: s for w, s in zip(windows, scores)})
    ps = score_pairs(v, ["c"], ["abcdefghijklmn"], window_chars=6, stride=4, progress=False)
    assert ps.best_window.tolist() == [best] and ps.score.tolist() == [max(scores)]


@pytest.mark.parametrize("max_windows,windows,score", [(None, 4, 0.9), (1, 1, 0.1), (2, 2, 0.1), (3, 3, 0.9), (9, 4, 0.9)])
def test_max_windows_keeps_a_passages_first_windows(max_windows, windows, score):
    """A 14-character passage in windows of 6 at stride 3: "abcdef", "defghi", "ghijkl", "ijklmn" (the last flush
    with the end): 4. Only the first max_windows are scored, so the supporting window 'g' is seen from the third on."""
    v = TableVerifier({"a": 0.1, "d": 0.1, "g": 0.9, "i": 0.2})
    ps = score_pairs(v, ["c"], ["abcdefghijklmn"], window_chars=6, stride=3, max_windows=max_windows, progress=False)
    assert ps.n_windows.tolist() == [windows] and ps.n_units == windows and ps.score.tolist() == [score]
