"""The guarantee card every report carries, and the drift monitor behind it.

:class:`GuaranteeKeeper` holds a guard's calibration and, when the calibration carries the scores it was
made from (``monitor_scores``, written by ``citebound calibrate`` and ``snakemake default_calibrations``
since 0.3), a :class:`~citebound.calibration.monitor.DriftMonitor` fed with the scores of every citation
the guard verifies. The card says what is promised and whether it still looks like it holds:

- ``group`` (the calibration's, or ``pooled``), ``alpha``, ``beta`` (when the false-flag rate is
  certified too), ``delta``, ``n_unsupported``, ``n_supported``, ``tau`` and ``calibration_hash``;
- ``monitor``: ``state`` (``ok``, ``suspect``: the martingale passed 1/delta, ``void``: returned labels
  reject the certified miss rate), the martingale's value, how many deployed scores it has seen.

``on_void``: what the guard does once the state is ``void``: ``annotate`` (guard as before; the card says
void) or ``flag-all`` (no citation passes: every one goes to review).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from citebound.calibration.monitor import DriftMonitor
from citebound.scoring.hashing import config_hash

ON_VOID = ("annotate", "flag-all")


def calibration_hash(cal: Mapping[str, Any]) -> str:
    """sha256 (16 hex) of a calibration's canonical JSON: which calibration a card speaks for."""
    return config_hash(dict(cal))


def calibration_delta(cal: Mapping[str, Any]) -> float:
    """The calibration's delta: a top-level one (a file written by hand), else its PAC bound's (citebound calibrate
    writes it there; its two-sided and precision rules use the same --delta), else 0.1."""
    return float(cal.get("delta") or (cal.get("pac") or {}).get("delta") or 0.1)


class GuaranteeKeeper:
    """One calibration's card and drift monitor. ``store`` (:mod:`citebound.calibration.state`): where the
    monitor's state lives, under ``key`` (the calibration's hash and group), so that every worker and replica
    sharing the store shares one monitor; each update is one atomic transaction of the store."""

    def __init__(self, cal: Mapping[str, Any] | None, *, monitor: bool = True, on_void: str = "annotate",
                 seed: int = 0, store: Any = None, group: str | None = None):
        from citebound.calibration.state import MemoryStore

        if on_void not in ON_VOID:
            raise ValueError(f"on_void must be one of {list(ON_VOID)}, got {on_void!r}")
        self.cal, self.on_void = cal, on_void
        self.hash = calibration_hash(cal) if cal is not None else None
        self.store = store if store is not None else MemoryStore()
        self.key = f"{self.hash}:{group or (cal or {}).get('group') or 'pooled'}"
        if self.store.shared:  # each process draws its own tie-breaking uniforms (shared seeds would correlate them)
            import os

            seed = int.from_bytes(os.urandom(8), "little")
        self.monitor: DriftMonitor | None = None
        self.monitor_off = "monitor turned off" if not monitor else ""
        if cal is not None and monitor:
            if cal.get("monitor_scores"):
                by_class = ((cal["monitor_scores_unsupported"], cal["monitor_scores_supported"])
                            if cal.get("monitor_scores_unsupported") and cal.get("monitor_scores_supported") else None)
                self.monitor = DriftMonitor(cal["monitor_scores"], delta=calibration_delta(cal), alpha=float(cal["alpha"]),
                                            seed=seed, by_class=by_class)
            else:
                self.monitor_off = "the calibration carries no monitor_scores (made before citebound 0.3): recalibrate"
        self._lock = threading.RLock()
        self.unobserved = 0  # deployed scores this process could not give the monitor (its store was down)

    def _refresh(self) -> None:
        """The monitor as the store has it now (another worker may have changed it); StoreUnavailable when
        the store cannot say."""
        if self.monitor is not None and self.store.shared:
            self.monitor.load(self.store.get(self.key))

    def unavailable(self) -> str:
        """Why the monitor's state cannot be read now ('' when it can)."""
        from citebound.calibration.state import StoreUnavailable

        if self.monitor is None:
            return ""
        try:
            with self._lock:
                self._refresh()
        except StoreUnavailable as e:
            return str(e)
        return ""

    def _apply(self, change: Any) -> Any:
        """Apply ``change(monitor)`` to the stored state in one transaction; returns what it returned."""
        out = []

        def fn(st: Any) -> Any:
            self.monitor.load(st)
            out.append(change(self.monitor))
            return self.monitor.dump()

        with self._lock:
            self.store.update(self.key, fn)
        return out[0]

    @property
    def state(self) -> str:
        """ok, suspect, void, off, or unavailable (the store cannot say: no state is claimed)."""
        from citebound.calibration.state import StoreUnavailable

        if self.monitor is None:
            return "off"
        with self._lock:
            try:
                self._refresh()
            except StoreUnavailable:
                return "unavailable"
            return self.monitor.state

    @property
    def flag_all(self) -> bool:
        """Whether no citation may pass now: ``on_void = flag-all`` and the state is void, or cannot be read
        (fails closed: a void that cannot be ruled out is treated as one)."""
        return self.on_void == "flag-all" and self.state in ("void", "unavailable")

    def observe(self, reports: Iterable[Any]) -> None:
        """Feed the monitor the scores of the citations these reports verified (an invalid pointer has none)."""
        if self.monitor is None:
            return
        self.observe_scores([a.score for r in reports for a in r.audit if a.score is not None])  # invalid: none

    def observe_scores(self, scores: list[float]) -> None:
        """Feed the monitor deployed citations' scores, in one transaction of the store. While the store is
        unavailable the verdicts go on (they do not need it) and the scores are counted as unobserved."""
        from citebound.calibration.state import StoreUnavailable

        if self.monitor is not None and scores:
            try:
                self._apply(lambda m: m.update(scores))
            except StoreUnavailable:
                self.unobserved += len(scores)

    def labels(self, missed: int, n_unsupported: int) -> str:
        """Returned labels of deployed citations: ``missed`` of ``n_unsupported`` unsupported ones passed."""
        if self.monitor is None:
            raise ValueError(f"no drift monitor on this guard ({self.monitor_off or 'no calibration'})")
        return self._apply(lambda m: m.labels(missed, n_unsupported))

    def reset(self, by: str) -> str:
        """Start the monitor afresh (after a recalibration was deployed, say); the card's history keeps who
        reset it and when."""
        import datetime

        if self.monitor is None:
            raise ValueError(f"no drift monitor on this guard ({self.monitor_off or 'no calibration'})")
        at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

        def fresh(m: Any) -> str:
            history = m.history + [{"reset_at": at, "by": by[:200], "was": m.state, "deployed_scores": m.n_seen,
                                    "labels": list(m.labels_seen)}]
            m.load(None)
            m.history = history
            return m.state

        return self._apply(fresh)

    def card(self, group: str | None = None, fallback: str | None = None) -> dict[str, Any]:
        """The card of a request; ``group`` is the group it named and ``fallback`` why that group uses
        this (the pooled) calibration."""
        if self.cal is None:
            return {"group": None, "calibration_hash": None, "guarantee": "none: the verifier's own verdict decides",
                    "monitor": {"state": "off", "reason": "no calibration"}}
        cal = self.cal
        monitor = {"state": "off", "reason": self.monitor_off}
        if self.monitor is not None:
            why = self.unavailable()
            with self._lock:  # no card claims a state that could not be read
                monitor = ({"state": "unavailable", "reason": f"the monitor's store cannot be read: {why}",
                            "meaning": "the guarantee's drift monitor cannot say whether it still holds; verdicts "
                                       "go on" + ("; with on_void flag-all every citation goes to review" if
                                                  self.on_void == "flag-all" else "")}
                           if why else self.monitor.card())
            if self.unobserved:
                monitor["unobserved_scores"] = self.unobserved
        if self.flag_all:
            monitor["action"] = "flag-all: every citation goes to review until the guard is recalibrated"
        out = {"group": group or cal.get("group") or "pooled", "calibrated_on": cal.get("group") or "pooled"}
        if fallback:
            out["fallback"] = fallback
        from citebound.calibration.files import in_force

        kind, tau, promise = in_force(cal)
        prov = cal.get("provenance") if isinstance(cal.get("provenance"), Mapping) else {}
        return out | {"in_force": kind, "promise": promise, "alpha": cal["alpha"], "beta": cal.get("beta"),
                      "delta": calibration_delta(cal),
                      "n_unsupported": cal.get("n_unsupported"), "n_supported": cal.get("n_supported"),
                      "tau": tau, "conformal_tau": cal["tau"],
                      "calibration_data": prov.get("calibrated_on") or "the labelled citations given to citebound "
                                                                         "calibrate (no provenance recorded)",
                      "scope": prov.get("holds_for") or "citations exchangeable with the calibration's",
                      "calibration_hash": self.hash, "monitor": monitor}


class Calibrations:
    """A guard's calibration and its groups (:mod:`citebound.calibration.groups`): for the group a request
    names, the keeper whose threshold and card apply (a fallback group gets the pooled keeper)."""

    def __init__(self, cal: Mapping[str, Any] | None, verifier: Any = None, **keeper: Any):
        from citebound.calibration.files import CalibrationError, check_verifier, read_calibration

        self.pooled = GuaranteeKeeper(cal, **keeper)
        self.groups: dict[str, GuaranteeKeeper] = {}
        self.fallback: dict[str, str] = {}
        for name, entry in ((cal or {}).get("groups") or {}).items():
            if not isinstance(entry, Mapping):
                raise CalibrationError(f"calibration group {name!r}: expected an object")
            if entry.get("fallback"):
                self.fallback[str(name)] = str(entry.get("reason") or "too few labelled citations")
                continue
            sub = read_calibration(entry)
            if verifier is not None and hasattr(verifier, "hash"):
                check_verifier(sub, verifier.name, verifier.hash, f"calibration group {name!r}")
            self.groups[str(name)] = GuaranteeKeeper(sub, group=str(name), **keeper)

    def names(self) -> list[str]:
        return sorted(set(self.groups) | set(self.fallback))

    def resolve(self, group: str | None) -> tuple[GuaranteeKeeper, str | None]:
        """(keeper, why it is the pooled one for this group, or None); ValueError for a group the calibration
        does not know."""
        if group is None:
            return self.pooled, None
        if group in self.groups:
            return self.groups[group], None
        if group in self.fallback:
            return self.pooled, f"group {group!r} uses the pooled calibration: {self.fallback[group]}"
        known = self.names()
        raise ValueError(f"unknown group {group!r}: the calibration's groups are {known}" if known else
                         f"group {group!r} given, but this calibration has no groups (calibrate with a 'group' "
                         "field on the labelled citations, or leave the group out)")
