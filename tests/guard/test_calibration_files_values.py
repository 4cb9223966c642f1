"""Calibration files at their edges (#56, round 49): a threshold of 0.0 is a threshold (never "none"), and the
too-few-unsupported warning at the count a finite conformal tau needs, worked out by hand."""
from __future__ import annotations

import math

import pytest

from citebound.calibration.files import calibration_summary, in_force


@pytest.mark.parametrize("cal,want", [
    ({"alpha": 0.1, "tau": 0.5, "precision": {"tau": 0.0, "guarantee": "g"}}, ("precision", 0.0, "g")),
    ({"alpha": 0.1, "tau": 0.5, "pac": {"tau": 0.0, "delta": 0.1, "guarantee": "g"}}, ("pac", 0.0, "g")),
    ({"alpha": 0.1, "tau": 0.0, "beta": 0.2, "marginal_guarantee": "m"}, ("two-sided", 0.0, "m")),
    ({"alpha": 0.1, "tau": 0.5, "precision": {"tau": None}, "pac": {"tau": 0.25, "delta": 0.1, "guarantee": "g"}},
     ("pac", 0.25, "g")),
])
def test_a_threshold_of_zero_is_in_force(cal, want):
    assert in_force(cal) == want


@pytest.mark.parametrize("alpha,n_unsupported,warned", [
    # a finite conformal tau needs n >= 1/alpha - 1 unsupported labels (9 at alpha 0.1, 19 at 0.05); the warning
    # asks for twice that: under 18 (38) it is given, at 18 (38) not
    (0.1, 17, True), (0.1, 18, False), (0.05, 37, True), (0.05, 38, False),
])
def test_the_too_few_unsupported_warning_at_twice_what_a_finite_tau_needs(alpha, n_unsupported, warned):
    need = math.ceil(1 / alpha - 1)
    assert need == {0.1: 9, 0.05: 19}[alpha]
    scores = [0.01 * (i + 1) for i in range(n_unsupported)] + [0.9, 0.95]
    labels = [0] * n_unsupported + [1, 1]
    msgs = calibration_summary(scores, labels, alpha, 0.1, "v", "h")["warnings"]
    mine = [m for m in msgs if m.startswith(f"only {n_unsupported} unsupported examples")]
    assert mine == ([f"only {n_unsupported} unsupported examples: alpha={alpha} needs >= {need} for a finite tau; "
                     "collect >= ~200 labelled citations from the target domain"] if warned else [])
