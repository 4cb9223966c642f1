"""The drift monitor and its keeper at their edges (#56, round 48): delta's open interval, which alarm a
calibration gets, labels that add up across posts, the calibration's own alpha in the label test, each process's
own tie-breaking draws on a shared store, and a group calibrated with another verifier refused. Expected values are
worked by hand."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from calibration_helpers import calibrate

from citebound.calibration.files import CalibrationError
from citebound.calibration.monitor import DriftMonitor
from citebound.calibration.state import MemoryStore, SqliteStore
from citebound.guarding.card import Calibrations, GuaranteeKeeper

SCORES = [0.05, 0.1, 0.2, 0.3, 0.7, 0.8, 0.9]


@pytest.mark.parametrize("delta,ok", [(0.0, False), (1.0, False), (-0.1, False), (1.5, False), (0.999, True),
                                      (1e-6, True), (0.1, True)])
def test_delta_lies_in_the_open_interval_0_1(delta, ok):
    if ok:
        assert DriftMonitor(SCORES, delta=delta).card()["alarm_at"] == pytest.approx(1 / delta)
    else:
        with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\), got"):
            DriftMonitor(SCORES, delta=delta)


@pytest.mark.parametrize("by_class,robust", [
    (([0.05, 0.1, 0.2], [0.7, 0.8, 0.9]), True),  # both classes: the label-shift robust alarm, at 2/delta
    (([0.05, 0.1, 0.2], []), False), (([], [0.7, 0.8]), False),  # one class only: the mixture martingale, at 1/delta
    (None, False),
])
def test_the_robust_alarm_needs_scores_of_both_classes(by_class, robust):
    card = DriftMonitor(SCORES, delta=0.1, by_class=by_class).card()
    assert card["alarm"].startswith("label-shift robust" if robust else "mixture martingale")
    assert card["alarm_at"] == pytest.approx(20.0 if robust else 10.0)


def test_labels_add_up_across_posts():
    m = DriftMonitor(SCORES, delta=0.1, alpha=0.1)
    m.labels(1, 10)
    m.labels(2, 5)
    lab = m.card()["labels"]
    assert (lab["missed"], lab["unsupported"]) == (3, 15)
    # P(Bin(15, 0.1) >= 3) = 1 - 0.9^15 - 15 * 0.1 * 0.9^14 - 105 * 0.01 * 0.9^13, worked out: 0.184061
    want = 1 - 0.9 ** 15 - 15 * 0.1 * 0.9 ** 14 - 105 * 0.01 * 0.9 ** 13
    assert lab["p_value"] == pytest.approx(want, abs=1e-6) and want == pytest.approx(0.184061, abs=1e-6)


def _cal(tmp_path, alpha):
    recs = [{"score": round(0.01 * i, 2), "label": 0} for i in range(1, 41)] + [{"score": 0.95, "label": 1}] * 5
    return json.loads(calibrate(tmp_path, recs, "--verifier-id", "fixed", "--alpha", str(alpha)).read_text())


@pytest.mark.parametrize("on_void,tail", [("flag-all", "; with on_void flag-all every citation goes to review"),
                                          ("annotate", "")])
def test_a_card_whose_store_cannot_be_read_says_what_that_means_under_its_on_void(tmp_path, on_void, tail):
    """A real Redis client on a port where nothing listens: the card's monitor is 'unavailable', and its meaning
    says every citation goes to review only where on_void is flag-all."""
    pytest.importorskip("redis", reason="the [redis] extra")
    from citebound.calibration.state import RedisStore

    k = GuaranteeKeeper(_cal(tmp_path, 0.1), store=RedisStore("redis://127.0.0.1:1/0", timeout_s=0.5), on_void=on_void)
    m = k.card()["monitor"]
    assert m["state"] == "unavailable" and m["reason"].startswith("the monitor's store cannot be read: ")
    assert m["meaning"] == "the guarantee's drift monitor cannot say whether it still holds; verdicts go on" + tail


def test_scores_given_to_a_keeper_whose_monitor_is_off_are_left_alone(tmp_path):
    k = GuaranteeKeeper(_cal(tmp_path, 0.1), monitor=False)
    k.observe_scores([0.2, 0.9])
    assert (k.monitor, k.unobserved, k.card()["monitor"]["state"]) == (None, 0, "off")


def test_the_label_test_runs_at_the_calibrations_alpha(tmp_path):
    k = GuaranteeKeeper(_cal(tmp_path, 0.05))
    k.labels(2, 10)
    # P(Bin(10, 0.05) >= 2) = 1 - 0.95^10 - 10 * 0.05 * 0.95^9 = 0.086138 (at alpha 0.1 it would be 0.263901)
    assert k.card()["monitor"]["labels"]["p_value"] == pytest.approx(1 - 0.95 ** 10 - 0.5 * 0.95 ** 9, abs=1e-6)
    assert k.monitor.alpha == 0.05


def test_each_process_on_a_shared_store_draws_its_own_uniforms_and_a_private_one_is_reproducible(tmp_path):
    """Two keepers (two processes) with the same seed: on a shared store each draws its own tie-breaking uniforms, so
    the same deployed scores move their martingales differently; on a private store the seed is kept (a rerun gives
    the same martingale)."""
    cal = _cal(tmp_path, 0.1)

    def martingale(store):
        k = GuaranteeKeeper(cal, store=store, seed=0)
        k.observe_scores([0.3, 0.35, 0.6, 0.02])
        return k.card()["monitor"]["martingale"]

    shared = [martingale(SqliteStore(str(tmp_path / f"s{i}.sqlite"))) for i in range(2)]
    private = [martingale(MemoryStore()) for _ in range(2)]
    assert shared[0] != shared[1] and math.isfinite(shared[0])
    assert private[0] == private[1]


def test_a_group_calibrated_with_another_verifier_is_refused(tmp_path):
    recs = [{"score": round(0.01 * i, 2), "label": 0, "group": "big"} for i in range(1, 23)]
    recs += [{"score": 0.95, "label": 1, "group": "big"}]
    cal = json.loads(calibrate(tmp_path, recs, "--verifier-id", "fixed").read_text())
    me = SimpleNamespace(name="fixed", hash=cal["verifier_hash"])
    assert Calibrations(cal, verifier=me).names() == ["big"]
    cal["groups"]["big"]["verifier_hash"] = "another"
    with pytest.raises(CalibrationError, match="calibration group 'big': calibrated for verifier 'fixed' with other"):
        Calibrations(cal, verifier=me)
