"""The calibration registry: named calibration profiles from a folder, each checked against the
served verifier, and one :class:`~citebound.guarding.guard.Guard` per profile (reloaded on SIGHUP)."""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from citebound.guarding.guard import Guard, GuardInputError
from citebound.text.limits import Limits

log = logging.getLogger("citebound.serving")


class CalibrationRegistry:
    """``profiles``: {name: calibration} loaded from ``folder`` (the file name is the profile);
    ``refused``: {name: why} for files that are not valid calibrations of this verifier."""

    def __init__(self, folder: str | None, limits: Limits, policy: Mapping[str, Any] | None = None):
        self.folder, self.limits, self.policy = folder, limits, dict(policy or {})
        self.scorer: Any = None
        self.reattributor: Any = None
        self.profiles: dict[str, dict[str, Any]] = {}
        self.refused: dict[str, str] = {}
        self.guards: dict[str | None, Guard] = {}

    def load(self, scorer: Any = None, reattributor: Any = None) -> None:
        """Read every calibration in the folder; keep those made with the served verifier."""
        from citebound.calibration.files import CalibrationError, check_verifier, read_calibration

        if scorer is not None:
            self.scorer, self.reattributor = scorer, reattributor
        profiles, refused = {}, {}
        for path in sorted(Path(self.folder).glob("*.json")) if self.folder else []:
            try:
                cal = read_calibration(str(path))
                check_verifier(cal, self.scorer.name, self.scorer.hash, str(path))
                profiles[path.stem] = cal
            except (CalibrationError, OSError, ValueError) as e:
                refused[path.stem] = str(e)
        guards = {None: self._guard(None)} | {name: self._guard(cal) for name, cal in profiles.items()}
        self.profiles, self.refused, self.guards = profiles, refused, guards
        log.info("calibration profiles: %s loaded, %s refused", sorted(profiles), sorted(refused))

    def _guard(self, cal: Mapping[str, Any] | None) -> Guard:
        return Guard(self.scorer, reattributor=self.reattributor, calibration=cal, limits=self.limits, **self.policy)

    def guard_for(self, name: str | None) -> Guard:
        """The guard of a profile (None: the verifier's own verdict); an unknown name is a GuardInputError."""
        if name not in self.guards:
            known = sorted(k for k in self.guards if k is not None)
            why = f" (refused at load: {self.refused[name]})" if name in self.refused else ""
            raise GuardInputError(f"unknown calibration profile {name!r}{why}; profiles: {known}")
        return self.guards[name]

    def describe(self) -> dict[str, Any]:
        """What GET /v1/calibrations answers (standard JSON: a tau that is not finite is null)."""
        from citebound.calibration.files import guarantee_line

        def finite(x: Any) -> Any:
            return x if isinstance(x, (int, float)) and math.isfinite(x) else None

        return {"verifier": self.scorer.name, "verifier_hash": self.scorer.hash,
                "profiles": {k: {"tau": finite(v["tau"]), "alpha": v["alpha"], "n_unsupported": v.get("n_unsupported"),
                                 "guarantee": guarantee_line(v)} for k, v in self.profiles.items()},
                "refused": self.refused}
