"""The calibration registry in-process: a reload (what SIGHUP runs) re-reads the folder from scratch and keeps
the served verifier and re-attributor; a profile with no finite threshold is refused."""
import json

import numpy as np
import pytest

from citebound.calibration.files import calibration_summary
from citebound.guarding.guard import GuardInputError
from citebound.guarding.reattributors import load_reattributor
from citebound.scoring.loader import load_scorer
from citebound.serving.registry import CalibrationRegistry
from citebound.text.limits import Limits

SCORES = list(np.linspace(0.05, 0.95, 40))


@pytest.fixture(scope="module")
def lexical():
    return load_scorer("lexical")


def write(path, verifier, vhash, n_unsupported=20, alpha=0.1):
    labels = [0] * n_unsupported + [1] * (len(SCORES) - n_unsupported)
    path.write_text(json.dumps(calibration_summary(SCORES, labels, alpha, 0.1, verifier, vhash)))


def test_a_reload_reads_the_folder_afresh_and_keeps_the_served_components(tmp_path, lexical):
    write(tmp_path / "p.json", "embedding", "0123456789abcdef")  # made with another verifier: refused
    bm25 = load_reattributor("bm25")
    reg = CalibrationRegistry(str(tmp_path), Limits())
    reg.load(lexical, bm25)
    assert reg.profiles == {} and "not 'lexical'" in reg.refused["p"]
    with pytest.raises(GuardInputError, match=r"unknown calibration profile 'p' \(refused at load: .*not 'lexical'"):
        reg.guard_for("p")
    write(tmp_path / "p.json", "lexical", lexical.hash)  # fixed, then reloaded as SIGHUP does: no arguments
    reg.load()
    assert list(reg.profiles) == ["p"] and reg.refused == {}
    assert reg.scorer is lexical and reg.reattributor is bm25
    assert all(g.reattributor is bm25 and g.scorer is lexical for g in reg.guards.values())
    assert set(reg.guards) == {None, "p"}
    (tmp_path / "p.json").unlink()  # a profile whose file is gone is gone after the next reload
    reg.load()
    assert reg.profiles == {} and set(reg.guards) == {None}


def test_a_profile_without_a_finite_tau_is_refused_and_the_rest_is_standard_json(tmp_path, lexical):
    """alpha 0.01 with 5 unsupported labels has no finite threshold: refused at load with why (so no served profile
    has a tau that is not finite); what /v1/calibrations answers is standard JSON."""
    write(tmp_path / "strict.json", "lexical", lexical.hash, n_unsupported=5, alpha=0.01)
    write(tmp_path / "ok.json", "lexical", lexical.hash)
    reg = CalibrationRegistry(str(tmp_path), Limits())
    reg.load(lexical)
    d = reg.describe()
    assert list(d["profiles"]) == ["ok"] and "has no threshold (only 5 unsupported labels" in d["refused"]["strict"]
    assert isinstance(d["profiles"]["ok"]["tau"], float) and d["profiles"]["ok"]["n_unsupported"] == 20
    json.dumps(d, allow_nan=False)  # no Infinity, no NaN


def test_an_unknown_profile_is_refused_naming_each_loaded_profile(tmp_path, lexical):
    write(tmp_path / "b.json", "lexical", lexical.hash)
    write(tmp_path / "a.json", "lexical", lexical.hash)
    reg = CalibrationRegistry(str(tmp_path), Limits())
    reg.load(lexical)
    with pytest.raises(GuardInputError) as e:
        reg.guard_for("c")
    assert str(e.value) == "unknown calibration profile 'c'; profiles: ['a', 'b']"
    assert reg.guard_for(None) is reg.guards[None] and reg.guard_for("a") is reg.guards["a"]
