"""What a guarantee card says, field by field, where a wrong value keeps every other test green (#56, round 82):
the delta citebound calibrate wrote (in its PAC bound, not at the top), and a reset's history bounded whatever the
caller sends as ``by``. Expected values are the options given, worked by hand."""
from __future__ import annotations

import json

import pytest
from calibration_helpers import calibrate

from citebound.guarding.card import GuaranteeKeeper

# 40 unsupported scores 0.01..0.40 and 5 supported at 0.95: enough for alpha 0.1 at any delta used here
RECORDS = [{"score": round(0.01 * i, 2), "label": 0} for i in range(1, 41)] + [{"score": 0.95, "label": 1}] * 5


@pytest.mark.parametrize("delta", [0.05, 0.2])
def test_the_card_states_the_delta_the_calibration_was_made_at(tmp_path, delta):
    cal = json.loads(calibrate(tmp_path, RECORDS, "--verifier-id", "fixed", "--delta", str(delta)).read_text())
    assert "delta" not in cal and cal["pac"]["delta"] == delta  # where citebound calibrate writes it
    card = GuaranteeKeeper(cal).card()
    assert card["delta"] == delta
    # the monitor's alarm, at the same delta: the label-shift robust one (scores of both classes), at 2/delta
    assert card["monitor"]["alarm_at"] == pytest.approx(2 / delta)


@pytest.mark.parametrize("drop", ["monitor_scores_supported", "monitor_scores_unsupported"])
def test_a_calibration_without_one_class_of_monitor_scores_gets_the_plain_alarm(tmp_path, drop):
    """The label-shift robust alarm needs both classes' scores; with either missing (a hand-edited or older
    file) the monitor is the plain one, alarming at 1/delta (delta 0.1: 10), not 2/delta."""
    cal = json.loads(calibrate(tmp_path, RECORDS, "--verifier-id", "fixed").read_text())
    del cal[drop]
    assert GuaranteeKeeper(cal).card()["monitor"]["alarm_at"] == pytest.approx(1 / 0.1)


def test_a_monitor_turned_off_says_so_on_the_card_and_refuses_labels_and_resets(tmp_path):
    cal = json.loads(calibrate(tmp_path, RECORDS, "--verifier-id", "fixed").read_text())
    k = GuaranteeKeeper(cal, monitor=False)
    assert k.card()["monitor"] == {"state": "off", "reason": "monitor turned off"}
    for call in (lambda: k.labels(1, 10), lambda: k.reset("ops")):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == "no drift monitor on this guard (monitor turned off)"
    assert "reason" not in GuaranteeKeeper(cal).card()["monitor"]  # on: the monitor's own card, no reason to be off


def test_a_hand_written_top_level_delta_is_the_cards():
    cal = {"tau": 0.3, "alpha": 0.1, "delta": 0.02, "pac": {"delta": 0.1}, "n_unsupported": 40, "n_supported": 5}
    assert GuaranteeKeeper(cal, monitor=False).card()["delta"] == 0.02


def test_a_resets_history_keeps_at_most_200_characters_of_who_reset_it(tmp_path):
    cal = json.loads(calibrate(tmp_path, RECORDS, "--verifier-id", "fixed").read_text())
    k = GuaranteeKeeper(cal)
    k.reset("ops:" + "x" * 5000)
    k.reset("b" * 200)
    hist = k.card()["monitor"]["history"]
    assert [len(h["by"]) for h in hist] == [200, 200]
    assert hist[0]["by"] == "ops:" + "x" * 196 and hist[1]["by"] == "b" * 200
