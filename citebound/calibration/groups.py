"""Group-conditional (Mondrian) calibration: one calibration per group of labelled citations.

Labelled citations may carry a ``group`` (a domain, a pipeline, a source). Each group is calibrated on
its own citations alone, by the same rule as the pooled calibration (the one-sided conformal threshold,
or Learn-then-Test with ``beta``), so its guarantee is conditional on the group: it holds for that
group's citations, not only on average over the mixture.

A group whose citations are too few for its alpha and delta **falls back** to the pooled calibration,
and says so (``fallback: "pooled"`` and the ``reason``). Too few means, for the one-sided rule, that the
PAC threshold does not exist (fewer unsupported citations than a catch rate >= 1 - alpha with
confidence 1 - delta needs: :func:`~citebound.calibration.conformal.pac_rank`); for the two-sided rule,
that no threshold is certified.

The calibration file keeps the pooled calibration at the top level and the groups under ``groups``::

    {"tau": ..., "alpha": ..., ..., "groups": {"biology": {"group": "biology", "tau": ..., ...},
                                               "law": {"group": "law", "fallback": "pooled", "reason": ...}}}
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

GROUP_FIELD = "group"


def sufficient(entry: Mapping[str, Any]) -> str | None:
    """Why a group's own calibration cannot stand (None: it can)."""
    if entry.get("tau") is None:
        return entry.get("no_tau_reason") or "no threshold"
    if "two_sided" not in entry and (entry.get("pac") or {}).get("tau") is None:
        pac = entry["pac"]
        return (f"{entry['n_unsupported']} unsupported citations are too few for a catch rate >= {1 - entry['alpha']:.3g} "
                f"with confidence {1 - pac['delta']:.3g} (the PAC threshold needs rank {pac['k']})")
    return None


def group_calibrations(scores: Sequence[float], labels: Sequence[int], groups: Sequence[str | None],
                       calibrate: Callable[[np.ndarray, np.ndarray], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{group: entry}`` for every named group: its own calibration (``calibrate(scores, labels)`` on its
    citations, stamped with the group's name), or a fallback entry saying why it uses the pooled one.
    ``calibrate`` may raise ValueError (e.g. a group with no unsupported citation): that is a fallback too."""
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    g = np.asarray([x if x is not None else "" for x in groups], dtype=object)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted({x for x in g if x}):
        mask = g == name
        counts = {"n_unsupported": int((y[mask] == 0).sum()), "n_supported": int((y[mask] == 1).sum())}
        try:
            entry = calibrate(s[mask], y[mask])
            reason = sufficient(entry)
        except ValueError as e:
            entry, reason = {}, str(e)
        if reason is None:
            out[name] = {**entry, GROUP_FIELD: name}
        else:
            out[name] = {GROUP_FIELD: name, "fallback": "pooled", "reason": reason, **counts}
    return out


def check_group_name(name: Any, where: str) -> str | None:
    """A record's group: absent/null, or a non-empty string of at most 200 characters."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ValueError(f"{where}: 'group' must be a non-empty string of at most 200 characters, got {name!r}")
    return name
