"""The negation feature by hand: which texts carry a cue under each version, a head scored with the version it
was trained on (recorded in head.json; absent means 1), and the contradiction check kept on version 1."""
import json

import numpy as np
import pytest
from test_trained import one_feature_head

from citebound.training.head import fit_head
from citebound.verifiers import build_verifier
from citebound.verifiers.trained import NEGATION_CUES, NEGATION_VERSION, negation_mismatch, read_head


@pytest.mark.parametrize("text,v1,v2", [
    ("Aspirin does not work.", True, True),
    ("Aspirin doesn't work.", False, True),          # a contraction: no word boundary before its n't
    ("Aspirin doesn\u2019t work.", False, True),     # the typographic apostrophe
    ("It can't be shown.", False, True),
    ("Statins WON'T help.", False, True),            # any case
    ("Aspirin does n't work.", True, True),          # FEVER's tokenised form: n't as a word of its own
    ("It cannot be shown.", True, True),
    ("The trial failed.", True, True),
    ("Aspirin works.", False, False),
    ("Notably, nothing changed; the nth trial.", False, False),  # no cue inside a longer word
    ("Nontoxic doses.", False, False),
    ("The cells lacked ATP.", True, True),
    ("An isn'tx token.", False, False),              # n't must end the word
])
def test_which_texts_carry_a_negation_cue(text, v1, v2):
    assert bool(NEGATION_CUES[1].search(text)) is v1
    assert bool(NEGATION_CUES[2].search(text)) is v2
    # the feature: a mismatch against a plain text, and none against itself
    assert negation_mismatch(text, "Aspirin works.", 1) == float(v1)
    assert negation_mismatch(text, "Aspirin works.", 2) == float(v2)
    assert negation_mismatch(text, text, 2) == 0.0 and negation_mismatch(text, text, 1) == 0.0
    assert negation_mismatch(text, "Aspirin works.") == float(v2)  # the default is what a head trained now reads


def test_a_head_records_its_version_and_an_old_one_reads_version_1(tmp_path):
    assert NEGATION_VERSION == 2
    x, y = np.array([[0.0] * 7, [1.0] * 7, [0.5] * 7, [0.2] * 7]), np.array([0, 1, 1, 0])
    assert fit_head(x, y)["negation_version"] == 2 and fit_head(x, y, negation_version=1)["negation_version"] == 1
    old = one_feature_head(tmp_path, "negation", "old")  # written without the key, as heads before it were
    assert read_head(old)["negation_version"] == 1
    bad = one_feature_head(tmp_path, "negation", "bad")
    head = json.loads((bad / "head.json").read_text())
    (bad / "head.json").write_text(json.dumps({**head, "negation_version": 3}))
    with pytest.raises(ValueError, match=r"negation_version 3 is not one this citebound knows \(\[1, 2\]\)"):
        read_head(bad)


def _with_version(d, version):
    head = json.loads((d / "head.json").read_text())
    (d / "head.json").write_text(json.dumps({**head, "negation_version": version}))
    return d


def test_a_head_is_scored_with_the_negation_cue_it_was_trained_on(tmp_path):
    """A head that is the logistic of the negation feature alone (coefficient 1, intercept 0): 1 / (1 + e^-1) where
    the cue is one-sided, 0.5 where it is not, so the version the verifier applies shows in the score."""
    claims = ["Aspirin doesn't lower fever.", "Aspirin does not lower fever.", "Aspirin lowers fever."]
    windows = ["Aspirin lowers fever."] * 3
    hi, mid = 1 / (1 + np.exp(-1.0)), 0.5
    want = {1: [mid, hi, mid], 2: [hi, hi, mid], None: [mid, hi, mid]}
    for version, expect in want.items():
        d = one_feature_head(tmp_path, "negation", f"v{version}")
        if version is not None:
            _with_version(d, version)
        v = build_verifier({"name": "trained", "kind": "trained", "model": str(d)}, tmp_path / "cache")
        s, _ = v.judge(claims, windows)
        assert s == pytest.approx(expect), version


def test_the_contradiction_check_reads_version_1_as_its_shipped_head_was_trained():
    from citebound.verifiers import contradiction as K

    class Recorder:
        def unit_features(self, claims, windows, progress=False, negation_version=None):
            self.version = negation_version
            return np.zeros((len(claims), 7))

    r = Recorder()
    x = K.unit_features(r, ["a doesn't b"], ["a b"])
    assert r.version == 1 == K.NEGATION_VERSION and x.shape == (1, 8)
    from citebound.training.contradiction import fit
    assert fit(np.random.default_rng(0).random((6, 8)), np.array([0, 1] * 3), 1.0)["negation_version"] == 1
