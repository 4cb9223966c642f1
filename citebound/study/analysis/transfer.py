"""Analysis 5b: a tau calibrated on easy negatives applied to human-refuted (hard) ones."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.calibration.conformal import conformal_threshold, tau_warnings_silenced
from citebound.study.analysis.conformal_eval import calibration_arrays


def transfer_table(cal: dict[str, pd.DataFrame], hard: dict[str, pd.DataFrame], targets: Sequence[float]) -> pd.DataFrame:
    """tau calibrated on easy in-question distractors, applied to human-refuted pairs."""
    rows = []
    for v in cal:
        if v not in hard:
            continue
        easy_neg, _ = calibration_arrays(cal[v], v)
        hard_neg, hard_pos = calibration_arrays(hard[v], v)
        for t in targets:
            a = round(1 - t, 10)
            with tau_warnings_silenced():
                tau = conformal_threshold(easy_neg, a)
                tau_hard = conformal_threshold(hard_neg, a)
            caught = int(np.sum(hard_neg <= tau))
            ci = st.wilson(caught, len(hard_neg))
            rows.append({
                "verifier": v, "target": t, "tau_easy": tau, "n_easy_unsupported": len(easy_neg),
                "n_hard_unsupported": len(hard_neg), "hard_catch_rate": ci.estimate, "ci_low": ci.low,
                "ci_high": ci.high, "easy_mean_score": float(np.mean(easy_neg)),
                "hard_mean_score": float(np.mean(hard_neg)),
                "mean_score_gap": float(np.mean(hard_neg) - np.mean(easy_neg)),
                "tau_needed_on_hard": tau_hard,
                "flag_rate_supported_at_tau_needed": float(np.mean(hard_pos <= tau_hard)) if len(hard_pos) else np.nan,
            })
    return pd.DataFrame(rows)
