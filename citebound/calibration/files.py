"""Calibration files: what ``citebound calibrate`` writes and the guard reads.

A calibration is bound to the verifier that produced its scores: its
``verifier_hash`` is the hash of that verifier's output-relevant config (or,
for scores from a verifier outside citebound, the ``--verifier-id`` string the
user gave). A guard refuses a calibration made for another verifier.
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REQUIRED_KEYS = ("alpha", "tau", "verifier", "verifier_hash")
# written into every calibration; a file without it was made before the rename from citeguard
FORMAT = "citebound-calibration/1"


class CalibrationError(ValueError):
    """A calibration that cannot be used; the message says why and what to do."""


def read_calibration(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A calibration from a path or a dict, with its required keys checked."""
    where = str(source) if isinstance(source, (str, Path)) else "calibration"
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            raise CalibrationError(f"{path}: is a directory, not a calibration JSON file")
        try:
            cal = json.loads(path.read_text())
        except OSError as e:
            raise CalibrationError(f"{path}: cannot read calibration ({e.strerror or e})") from None
        except json.JSONDecodeError as e:
            raise CalibrationError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    else:
        cal = dict(source)
    if not isinstance(cal, dict):
        raise CalibrationError(f"{where}: not a citebound calibration (expected a JSON object)")
    for key in REQUIRED_KEYS:
        if key not in cal:
            raise CalibrationError(f"{where}: not a citebound calibration (missing {key!r})")
    fix = f"citebound calibrate --labels LABELS.jsonl --verifier {cal['verifier']} --out NEW.json"
    if cal.get("format") != FORMAT:
        raise CalibrationError(f"{where}: made before citebound 0.2 (no 'format': {FORMAT!r}); its verifier id may "
                               f"no longer match the verifier's, so it is not used. Recalibrate: {fix}")
    if cal["tau"] is None:
        raise CalibrationError(f"{where}: has no threshold ({cal.get('no_tau_reason') or 'tau is null'}); "
                               f"label more citations and recalibrate: {fix}")
    if isinstance(cal["tau"], bool) or not isinstance(cal["tau"], (int, float)):
        raise CalibrationError(f"{where}: 'tau' is not a number ({cal['tau']!r})")
    cal["tau"] = float(cal["tau"])
    if not math.isfinite(cal["tau"]):
        raise CalibrationError(f"{where}: 'tau' is {cal['tau']}, not a finite number: -inf would pass every citation "
                               f"and +inf flag every one. Recalibrate: {fix}")
    if not (isinstance(cal["alpha"], (int, float)) and 0 < cal["alpha"] < 1):
        raise CalibrationError(f"{where}: 'alpha' must be a number in (0, 1), got {cal['alpha']!r}")
    return cal


def check_verifier(cal: Mapping[str, Any], verifier_name: str, verifier_hash: str, where: str = "calibration") -> None:
    """Refuse a calibration whose scores came from another verifier (or another config of it)."""
    if cal["verifier_hash"] == verifier_hash:
        return
    if cal["verifier"] == verifier_name:
        raise CalibrationError(
            f"{where}: calibrated for verifier {cal['verifier']!r} with other settings (id {cal['verifier_hash']}, "
            f"now {verifier_hash}): a changed config key, --override, --runtime or --quantize changes its scores; "
            f"guard with the settings it was calibrated with, or recalibrate: citebound calibrate --labels "
            f"LABELS.jsonl --verifier {verifier_name}")
    raise CalibrationError(
        f"{where}: calibrated for verifier {cal['verifier']!r} (id {cal['verifier_hash']}), "
        f"not {verifier_name!r} (id {verifier_hash}); guard with --verifier {cal['verifier']} "
        f"or recalibrate: citebound calibrate --labels LABELS.jsonl --verifier {verifier_name}")


def in_force(cal: Mapping[str, Any]) -> tuple[str, float, str]:
    """(which guarantee, the threshold the guard deploys, what it promises) of a calibration:

    - ``precision``: at most q of the passed citations are unsupported (``--precision``); its certified tau;
    - ``two-sided``: Learn-then-Test certified both rates (``--beta``); its certified tau;
    - ``pac``: enough unsupported labels for the PAC threshold: with probability >= 1 - delta over the
      calibration draw, *this* calibration's miss rate is <= alpha (what returned labels can test);
    - ``marginal``: too few for that; the conformal tau, whose promise holds only on average over
      calibration draws (a given calibration misses more than alpha about half the time).

    >>> in_force({"alpha": 0.1, "tau": 0.5, "pac": {"tau": 0.6, "delta": 0.1, "guarantee": "g"}})[:2]
    ('pac', 0.6)
    >>> in_force({"alpha": 0.1, "tau": 0.5, "pac": {"tau": None, "delta": 0.1}})[:2]
    ('marginal', 0.5)
    """
    prec = cal.get("precision") or {}
    if prec.get("tau") is not None:
        return "precision", float(prec["tau"]), str(prec.get("guarantee"))
    if cal.get("beta") is not None and cal.get("tau") is not None:
        return "two-sided", float(cal["tau"]), str(cal.get("marginal_guarantee"))
    pac = cal.get("pac") or {}
    if pac.get("tau") is not None:
        return "pac", float(pac["tau"]), str(pac.get("guarantee") or f"PAC at delta {pac.get('delta')}")
    return "marginal", float(cal["tau"]), (f"{cal.get('marginal_guarantee', 'conformal flag rule')} (marginal only: on "
                                           "average over calibration draws; too few unsupported labels for the PAC "
                                           f"threshold at delta {pac.get('delta', 0.1)})")


def guarantee_line(cal: Mapping[str, Any]) -> str:
    """The calibration's promise, in one line, for reports and the audit page (with where it was made,
    for the shipped defaults)."""
    kind, tau, promise = in_force(cal)
    line = (f"{promise} (alpha={cal['alpha']}, tau={tau:.6g}, {kind}, n_unsupported={cal.get('n_unsupported')}); "
            f"assumes {cal.get('assumption', 'exchangeability')}")
    prov = cal.get("provenance")
    if isinstance(prov, Mapping) and prov.get("calibrated_on"):
        line += f"; calibrated on {prov['calibrated_on']}; holds only for {prov.get('holds_for', 'similar answers')}"
    return line


def calibration_summary(scores: Sequence[float], labels: Sequence[int], alpha: float, delta: float,
                        verifier: str, verifier_hash: str) -> dict[str, Any]:
    """Split-conformal threshold, PAC threshold and expected flag rate from labelled scores.

    Scores must be finite and at least one label must be 0 (unsupported); a
    calibration without unsupported examples promises nothing.
    """
    from citebound.calibration.conformal import ConformalGuard, SmallCalibrationWarning, pac_rank
    from citebound.calibration.stats import wilson

    scores, labels = np.asarray(scores, float), np.asarray(labels, int)
    if not 0 < alpha < 1:
        raise CalibrationError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 < delta < 1:
        raise CalibrationError(f"delta must be in (0, 1), got {delta}")
    if not np.isfinite(scores).all():
        raise CalibrationError(f"{int((~np.isfinite(scores)).sum())} scores are not finite")
    if not (labels == 0).any():
        raise CalibrationError(f"no unsupported examples (label 0) among {len(labels)}: the threshold is set by "
                               "unsupported citations, so label some (>= ~200 from the target domain)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SmallCalibrationWarning)
        guard = ConformalGuard(alpha=alpha).calibrate(scores, labels)
    neg = np.sort(scores[labels == 0])
    kp = pac_rank(len(neg), alpha, delta)
    flags = ~(scores > guard.tau)
    fr = wilson(int(flags.sum()), len(flags))
    need = math.ceil(1 / alpha - 1)
    msgs = [str(w.message) for w in caught]
    if len(neg) < 2 * need:
        msgs.append(f"only {len(neg)} unsupported examples: alpha={alpha} needs >= {need} for a finite tau; "
                    f"collect >= ~200 labelled citations from the target domain")
    finite = math.isfinite(guard.tau)
    return {
        "format": FORMAT,
        "alpha": alpha, "tau": guard.tau if finite else None, "k": guard.k, "n_unsupported": guard.n_unsupported,
        "no_tau_reason": None if finite else (f"only {len(neg)} unsupported labels: alpha={alpha} needs at least "
                                              f"{need} for a finite threshold"),
        "n_supported": int((labels == 1).sum()),
        "verifier": verifier, "verifier_hash": verifier_hash,
        "marginal_guarantee": f"a new unsupported citation is flagged with probability >= {1 - alpha:.3g}",
        "pac": {"delta": delta, "k": kp, "tau": float(neg[kp - 1]) if kp <= len(neg) else None,
                "guarantee": f"with probability >= {1 - delta:.3g} over the calibration draw, "
                             f"the catch rate is >= {1 - alpha:.3g}"},
        "expected_flag_rate": {"estimate": fr.estimate, "ci_low": fr.low, "ci_high": fr.high,
                               "note": "share of all labelled citations flagged at tau (Wilson 95% CI)"},
        "flag_rate_supported": float(np.mean(scores[labels == 1] <= guard.tau)) if (labels == 1).any() else None,
        "assumption": "calibration unsupported citations are exchangeable with deployment unsupported citations",
        "warnings": msgs,
        # every labelled citation's score, sorted: the reference the drift monitor compares deployed scores
        # with (citebound.calibration.monitor), in the mixture of supported and unsupported that deployment sees
        "monitor_scores": [round(float(x), 6) for x in np.sort(scores)],
        # the same scores by class: the label-shift robust alarm (citebound.calibration.eprocess) compares deployed
        # scores with every mixture of these two, whatever the deployment's supported share
        "monitor_scores_unsupported": [round(float(x), 6) for x in np.sort(scores[labels == 0])],
        "monitor_scores_supported": [round(float(x), 6) for x in np.sort(scores[labels == 1])],
    }
