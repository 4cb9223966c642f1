"""The trained head's feature rows worked out by hand: an encoder whose vectors are chosen (so every cosine
is known), units spread over several chunks, the number share's decimal comma, the verdict at exactly its
threshold, the training instance of tied windows, the claim cap and the head's counts."""
from collections import OrderedDict

import numpy as np
import pytest
from test_trained import one_feature_head

from citebound.training.head import FrozenFeatures, best_window, fit_head
from citebound.verifiers import build_verifier
from citebound.verifiers.trained import FEATURES, FrozenEncoder, number_share

E1, E2, E3 = np.eye(3)


class HandEncoder(FrozenEncoder):
    """The real feature code (unit_features, the memo) over vectors given by hand: text -> (pooled per layer
    (3 x d), token vectors (tokens x d))."""

    def __init__(self, vectors, memo_texts=1024):
        self._memo = OrderedDict()
        self.memo_texts = memo_texts
        self.vectors = vectors
        self.encoded = []

    def encode(self, texts):
        self.encoded.append(list(texts))
        return [self.vectors[t][0] for t in texts], [self.vectors[t][1] for t in texts]


def test_a_units_row_is_three_layer_cosines_token_alignment_and_the_text_features():
    # claim tokens e1, e2; window tokens e1, e1, e3: each claim token's best cosine is 1 and 0 -> maxsim 0.5
    # (averaged over the window's tokens instead it would be (1 + 1 + 0) / 3)
    v = {"ca": (np.array([E1, E1, E1]), np.array([E1, E2])),
         "wa": (np.array([E1, E2, (E1 + E2) / np.sqrt(2)]), np.array([E1, E1, E3]))}
    row = HandEncoder(v).unit_features(["ca"], ["wa"])[0]
    # no content term in common, no number in the claim (share 1), no negation cue
    assert row.tolist() == pytest.approx([1.0, 0.0, 1 / np.sqrt(2), 0.5, 0.0, 1.0, 0.0])
    assert FEATURES == ["cos_l2", "cos_l4", "cos_l6", "maxsim", "term_recall", "numbers", "negation"]


def test_units_past_the_first_chunk_keep_their_own_rows():
    """Five units in chunks of two: unit k's window is at angle 0.3 k from the claim, so its cosines and its
    token alignment are cos(0.3 k), in its own row whatever chunk it fell in."""
    v = {}
    claims, windows = [], []
    for k in range(5):
        u = np.array([np.cos(0.3 * k), np.sin(0.3 * k), 0.0])
        v[f"c{'abcde'[k]}"] = (np.array([E1, E1, E1]), np.array([E1]))
        v[f"w{'abcde'[k]}"] = (np.array([u, u, u]), np.array([u]))
        claims.append(f"c{'abcde'[k]}")
        windows.append(f"w{'abcde'[k]}")
    rows = HandEncoder(v).unit_features(claims, windows, chunk=2)
    for k in range(5):
        c = np.cos(0.3 * k)
        assert rows[k].tolist() == pytest.approx([c, c, c, c, 0.0, 1.0, 0.0]), k


def test_a_text_seen_in_an_earlier_chunk_is_not_encoded_again():
    v = {t: (np.array([E1, E1, E1]), np.array([E1])) for t in ("ca", "wa", "wb")}
    enc = HandEncoder(v)
    enc.unit_features(["ca", "ca", "ca"], ["wa", "wb", "wa"], chunk=2)
    assert enc.encoded == [["ca", "wa", "wb"]]  # the second chunk's texts were all in the memo


@pytest.mark.parametrize("claim, window, share", [
    ("a dose of 1,5 mg", "1.5 mg daily", 1.0),     # a decimal comma is a decimal point, on either side
    ("a dose of 1.5 mg", "1,5 mg daily", 1.0),
    ("1,5 mg in 12 men", "1,5 mg", 0.5),          # one of the claim's two numbers is in the window
    ("12 men and 12 women", "12", 1.0),            # the claim's numbers as a set: {12}
    ("44 percent", "4 percent", 0.0),             # whole numbers, not digits inside them
    ("0 deaths", "0 of them", 1.0),               # zero is a number
])
def test_number_share_by_hand(claim, window, share):
    assert number_share(claim, window) == share


def test_a_score_exactly_at_the_threshold_is_supported_and_one_just_below_is_not(tmp_path):
    """A head with no coefficients scores 1 / (1 + e^-intercept) on every unit: 0.5 exactly at intercept 0
    (verdict supported, score >= 0.5), and 0.5 - 2.5e-13 at intercept -1e-12 (unsupported)."""
    claims, windows = ["Aspirin lowers fever.", "Statins lower LDL."], ["Aspirin reduces fever.", "Nothing here."]
    at = build_verifier({"name": "t", "kind": "trained", "model": str(one_feature_head(tmp_path, None, "at", 0.0))})
    s, verdict = at.judge(claims, windows)
    assert s.tolist() == [0.5, 0.5] and verdict.tolist() == [True, True]
    below = build_verifier({"name": "t", "kind": "trained", "model": str(one_feature_head(tmp_path, None, "below", -1e-12))})
    s, verdict = below.judge(claims, windows)
    assert (s < 0.5).all() and verdict.tolist() == [False, False]


def test_tied_windows_train_through_the_first():
    """best_window: each pair's unit with the highest layer-6 cosine; of tied ones the first (the embedding
    verifier's max is the same either way, but the training row is fixed: the earliest window)."""
    l6 = FEATURES.index("cos_l6")
    units = np.zeros((5, len(FEATURES)))
    units[:, l6] = [0.2, 0.7, 0.7, 0.9, 0.9]
    units[:, 0] = [10, 11, 12, 13, 14]  # tells the rows apart
    owner = np.array([0, 0, 0, 1, 1])
    out = best_window(units, owner, 3)
    assert out[:, 0].tolist() == [11, 13, 0]  # pair 2 has no unit: a zero row
    assert out[:, l6].tolist() == [0.7, 0.9, 0.0]


class Recording(FrozenFeatures):
    def __init__(self):
        self.sent = None

    def unit_features(self, claims, windows, progress=False):
        self.sent = (list(claims), list(windows))
        return np.zeros((len(claims), len(FEATURES)))


def test_training_units_follow_the_scoring_protocol():
    """pair_units: claims capped at 600 characters, passages in 600-character windows at stride 300 (a
    1,000-character passage: windows at 0 and 300, and the last one flush with its end, at 400), an empty
    passage one empty window."""
    rec = Recording()
    claim = "c" * 700
    passage = "".join(chr(ord("a") + i // 100) for i in range(1000))  # 100 a's, 100 b's, ...
    units, owner = rec.pair_units([claim, "short claim"], [passage, ""])
    claims, windows = rec.sent
    assert claims == ["c" * 600] * 3 + ["short claim"]
    assert windows == [passage[0:600], passage[300:900], passage[400:1000], ""]
    assert owner.tolist() == [0, 0, 0, 1] and units.shape == (4, len(FEATURES))


def test_fit_head_records_its_counts_and_a_constant_feature():
    """Three supported and two unsupported rows; the third feature is constant (its scale is recorded as 1,
    not 0, so scoring never divides by zero)."""
    x = np.array([[0.9, 1.0, 0.5], [0.8, 0.7, 0.5], [0.7, 0.9, 0.5], [0.1, 0.2, 0.5], [0.2, 0.1, 0.5]])
    y = np.array([1, 1, 1, 0, 0])
    head = fit_head(x, y, c=1.0, features=["a", "b", "k"])
    assert head["n_train"] == 5 and head["n_train_supported"] == 3
    assert head["mean"] == pytest.approx([0.54, 0.58, 0.5])
    assert head["scale"][2] == 1.0
    assert head["scale"][0] == pytest.approx(np.sqrt(np.mean((x[:, 0] - 0.54) ** 2)))
