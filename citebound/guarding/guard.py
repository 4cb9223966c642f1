"""The deployable guard, assembled once: :class:`Guard` (a verifier, a re-attributor, a calibration and
its groups, the limits), over the functions of :mod:`citebound.guarding.core` (verify -> re-attribute ->
flag), which this module re-exports for callers that import them from here.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from citebound.guarding.core import (  # noqa: F401 - the guard's functions, importable from here too
    Scorer,
    guard_answer,
    guard_answers,
    guard_each,
    plan_citations,
)
from citebound.guarding.reattributors import Reattributor, load_reattributor
from citebound.guarding.report import ACTIONS, CitationAudit, Evidence, GuardReport, normalise_passages  # noqa: F401

# GuardInputError (bad input) and its subclass LimitExceeded: callers catch them from here too
from citebound.text.limits import GuardInputError, LimitExceeded, Limits  # noqa: F401


class Guard:
    """The guard, assembled once: a verifier, a re-attributor, a calibration and the options.

    The library's :func:`citebound.guard`, the ``citebound`` CLI and the pipeline's worked examples
    all guard through this object, so a model loads once per process.

    ``verifier``: a verifier definition name (``citebound/definitions/verifier/``) or a scorer
    ``(claims, passages) -> (scores, verdicts)``; ``reattributor``: a definition name, a
    :class:`Reattributor` or None; ``calibration``: a calibration dict or JSON path from
    ``citebound calibrate`` (its verifier must be this one), or ``threshold``: a plain tau. Neither
    means the verifier's own verdict decides. ``runtime``, ``overrides``, ``model_path`` and
    ``cache_dir`` go to :func:`citebound.scoring.loader.load_scorer`. ``limits``: the input bounds
    (:class:`~citebound.text.limits.Limits`; safe defaults), enforced before any expansion or scoring.
    ``state``: where the drift monitors keep their state (``memory://``, the default; ``sqlite:///PATH``;
    ``redis://HOST:PORT/DB``; or a :class:`~citebound.calibration.state.StateStore`): guards that share it
    share one monitor per calibration and group.

    >>> g = Guard("lexical")
    >>> text, report = g.guard("Mitochondria produce ATP [1].", ["Mitochondria produce ATP in cells."])
    >>> report.verified, report.review_budget
    (1, 0.0)
    """

    def __init__(self, verifier: str | Scorer = "embedding", *, reattributor: str | Reattributor | None = "bm25",
                 calibration: str | Mapping[str, Any] | None = None, threshold: float | None = None,
                 base: int = 1, remove: bool = False, proposals: int = 3,
                 runtime: Mapping[str, Any] | None = None, overrides: Mapping[str, Any] | None = None,
                 model_path: str | None = None, cache_dir: str | None = None, limits: Limits | None = None,
                 default_calibration: bool = True, mark_reattributed: bool = True, monitor: bool = True,
                 on_void: str = "annotate", action: str | None = None, block_above: float | None = None,
                 on_error: str = "closed", uncited: str = "flag", state: Any = None):
        from citebound.calibration.files import CalibrationError, check_verifier, guarantee_line, in_force, read_calibration
        from citebound.guarding.card import Calibrations

        if calibration is not None and threshold is not None:
            raise GuardInputError("give a calibration or a threshold, not both")
        if base not in (0, 1):
            raise GuardInputError(f"citation base must be 0 or 1, got {base!r}")
        self.action, self.block_above, self.on_error = _policy(action, remove, block_above, on_error)
        from citebound.guarding.core import UNCITED

        if uncited not in UNCITED:
            raise GuardInputError(f"uncited must be one of {list(UNCITED)}, got {uncited!r}")
        self.uncited = uncited
        cal = read_calibration(calibration) if calibration is not None else None
        self.reattributor = (load_reattributor(reattributor, proposals) if isinstance(reattributor, str)
                             else reattributor)
        if isinstance(verifier, str):
            from citebound.scoring.loader import load_scorer

            verifier = load_scorer(verifier, overrides, model_path=model_path, cache_dir=cache_dir, runtime=runtime)
        self.scorer = verifier
        self.tau: float | None = float(threshold) if threshold is not None else None
        self.guarantee = ""
        self.calibration = cal
        if cal is not None:
            if hasattr(self.scorer, "hash"):
                check_verifier(cal, self.scorer.name, self.scorer.hash,
                               calibration if isinstance(calibration, str) else "calibration")
            self.tau, self.guarantee = in_force(cal)[1], guarantee_line(cal)
        elif threshold is None and default_calibration:
            self._use_default_calibration()
        self.base, self.remove, self.mark_reattributed = base, self.action == "remove", mark_reattributed
        self.limits = limits or Limits()
        try:
            from citebound.calibration.state import StateStore, open_store

            store = state if isinstance(state, StateStore) else open_store(state)
            self.calibrations = Calibrations(self.calibration, self.scorer, monitor=monitor, on_void=on_void,
                                             store=store)
        except CalibrationError:
            raise
        except ValueError as e:
            raise GuardInputError(str(e)) from None
        self.keeper = self.calibrations.pooled  # the pooled calibration's (a group's: self.calibrations.groups)

    def _for(self, group: str | None) -> tuple[Any, str | None, float | None, str]:
        """(keeper, fallback, tau, guarantee line) of a request's group. No citation passes once its
        monitor's state is void and ``on_void`` is flag-all."""
        from citebound.calibration.files import guarantee_line, in_force

        try:
            keeper, fallback = self.calibrations.resolve(group)
        except ValueError as e:
            raise GuardInputError(str(e)) from None
        own = keeper is not self.keeper
        tau = in_force(keeper.cal)[1] if own else self.tau
        return keeper, fallback, (math.inf if keeper.flag_all else tau), guarantee_line(keeper.cal) if own else self.guarantee

    def threshold(self, group: str | None = None) -> float | None:
        """The threshold a citation of ``group`` must pass now (inf once its monitor is void under flag-all;
        None: the verifier's verdict decides)."""
        return self._for(group)[2]

    def _carded(self, results: list[Any], keeper: Any, group: str | None, fallback: str | None,
                block: bool = True) -> list[Any]:
        """Feed the monitor this call's scores, then give every report the card as it stands after them;
        with ``action="block"``, an answer past the review budget keeps its report and loses its text."""
        reports = [r[1] for r in results if not isinstance(r, GuardInputError)]
        keeper.observe(reports)
        card = keeper.card(group, fallback)
        for r in reports:
            r.guarantee_card = card
        for i, r in enumerate(results):
            if block and not isinstance(r, GuardInputError) and self.blocks(r[1]):
                results[i] = ("", r[1])
        return results

    def blocks(self, report: GuardReport) -> bool:
        """Whether ``action="block"`` withholds this answer (its review budget is past ``block_above``);
        marks the report so."""
        if self.action != "block" or not report.review_budget > self.block_above:
            return False
        report.blocked = True
        uncited = f", and {report.uncited} sentences cite nothing" if report.uncited and self.uncited == "flag" else ""
        report.block_reason = (f"review budget {report.review_budget:.3g} is past --block-above {self.block_above:g}: "
                               f"{report.flagged + report.invalid + report.unverified} of {report.n_citations} "
                               f"citations failed or could not be checked{uncited}")
        return True

    def _use_default_calibration(self) -> None:
        """The shipped calibration of this verifier (``citebound/calibrations/<name>.json``, made on the expert
        attribution gold), when the verifier runs exactly as it was calibrated; else the verdict rule."""
        from citebound.calibration.files import guarantee_line, in_force
        from citebound.calibrations import shipped

        cal = shipped(getattr(self.scorer, "name", ""))
        if cal is not None and cal["verifier_hash"] == getattr(self.scorer, "hash", None):
            self.calibration, self.tau, self.guarantee = cal, in_force(cal)[1], guarantee_line(cal)

    @property
    def verifier_name(self) -> str:
        return str(getattr(self.scorer, "name", getattr(self.scorer, "__name__", "scorer")))

    @property
    def kind(self) -> str:
        return str(getattr(self.scorer, "cfg", {}).get("kind", ""))

    @property
    def score_scale(self) -> str:
        """What the verifier's score means, and what it cannot see (citebound.verifiers.SCALES)."""
        from citebound.verifiers import SCALES

        return SCALES.get(self.kind, "")

    @property
    def sees(self) -> str:
        """What the verifier can tell apart (citebound.verifiers.SEES)."""
        from citebound.verifiers import SEES

        return SEES.get(self.kind, "")

    @property
    def rule(self) -> str:
        return f"pass iff score > tau = {self.tau:.6g}" if self.tau is not None else "pass iff verifier verdict"

    def guard(self, answer: str, passages: Sequence[Any], *, base: int | None = None,
              group: str | None = None) -> tuple[str, GuardReport]:
        """Verify -> re-attribute -> flag one answer; ``passages`` are strings or ``{"text": ...}``;
        ``group``: the calibration group the answer belongs to (None: the pooled calibration)."""
        return self.guard_many([(answer, passages)], base=base, group=group)[0]

    def guard_many(self, items: Sequence[tuple[str, Sequence[Any]] | tuple[str, Sequence[Any], int]],
                   *, base: int | None = None, group: str | None = None,
                   open_end: bool = False, block: bool = True) -> list[tuple[str, GuardReport]]:
        """Guard several answers of one group; their forward passes span answers. Each item is
        ``(answer, passages)`` or ``(answer, passages, base)``. One bad answer raises for all: use
        :meth:`guard_each` to get each answer's own error instead. ``open_end``: each answer is complete
        sentences that more text follows (a stream's), so a removed last sentence takes the whitespace after it;
        ``block=False``: leave ``action="block"`` to the caller (a stream blocks on the whole answer so far)."""
        keeper, fallback, tau, guarantee = self._for(group)
        return self._carded(guard_answers(self._items(items, base, isolate=False), self.scorer, tau=tau,
                                          reattribute=self.reattributor, remove=self.remove, guarantee=guarantee,
                                          limits=self.limits, mark_reattributed=self.mark_reattributed,
                                          fail_open=self.on_error == "open", open_end=open_end,
                                          uncited=self.uncited),
                            keeper, group, fallback, block)

    def guard_each(self, items: Sequence[tuple[str, Sequence[Any]] | tuple[str, Sequence[Any], int]],
                   *, base: int | None = None, group: str | None = None) -> list[tuple[str, GuardReport] | GuardInputError]:
        """:meth:`guard_many`, where an answer that is bad input or past a limit gets its error in its
        place (a :class:`GuardInputError`, or its subclass :class:`LimitExceeded`) and the rest are guarded."""
        keeper, fallback, tau, guarantee = self._for(group)
        todo = self._items(items, base, isolate=True)
        ok = [i for i, x in enumerate(todo) if not isinstance(x, GuardInputError)]
        out: list[Any] = list(todo)
        done = guard_each([todo[i] for i in ok], self.scorer, tau=tau, reattribute=self.reattributor,
                          remove=self.remove, guarantee=guarantee, limits=self.limits,
                          mark_reattributed=self.mark_reattributed, fail_open=self.on_error == "open",
                          uncited=self.uncited)
        for i, r in zip(ok, done):
            out[i] = r
        return self._carded(out, keeper, group, fallback)

    def unchecked(self, answer: str, passages: Sequence[Any], reason: str, *, base: int | None = None,
                  group: str | None = None, open_end: bool = False) -> tuple[str, GuardReport]:
        """The answer with every citation it makes 'unverified' (``reason``: why none could be checked, e.g.
        the guard ran past its time), no verifier called: what failing closed gives when the guard cannot run."""
        from citebound.guarding.core import Unavailable

        keeper, fallback, tau, guarantee = self._for(group)
        return self._carded(guard_answers(self._items([(answer, passages)], base, isolate=False), Unavailable(reason),
                                          tau=tau, reattribute=None, remove=self.remove, guarantee=guarantee,
                                          limits=self.limits, mark_reattributed=self.mark_reattributed,
                                          fail_open=self.on_error == "open", open_end=open_end,
                                          uncited=self.uncited),
                            keeper, group, fallback, block=False)[0]

    def stream(self, pieces: Iterable[str], passages: Sequence[Any], *, base: int | None = None,
               group: str | None = None) -> Iterator[str | GuardReport]:
        """Guard an answer as it streams: yields guarded text as each sentence completes, then the whole
        answer's report. The text joins to what :meth:`guard` gives the whole answer. With
        ``action="block"``, the stream stops once the review budget so far passes ``block_above`` (the
        sentences already yielded cannot be taken back; the report says how many went out). Whatever the action,
        it stops the same way at a sentence that restyles the answer (a stylesheet, a declarative shadow root, an
        ``<html>`` or ``<body>`` tag), which can change how the text already yielded is drawn."""
        from citebound.guarding.stream import StreamAssembler

        asm = StreamAssembler(self.limits, self.on_error == "open")
        texts = normalise_passages(list(passages))

        def step(seg: str, final: bool) -> str:
            ((text, rep),) = self.guard_many([(seg, texts, base)], group=group, open_end=not final, block=False)
            out = asm.add(seg, text, rep)
            if (stop := asm.blocked(self)) is not None:
                raise _Blocked(stop)
            return out

        try:
            for piece in pieces:
                seg = asm.feed(piece)
                if seg and (out := step(seg, False)):
                    yield out
            if out := step(asm.finish(), True):
                yield out
        except _Blocked as b:
            yield b.report
            return
        tail, rep = asm.end()
        if tail:
            yield tail
        yield rep

    def _items(self, items: Sequence[Any], base: int | None, isolate: bool) -> list[Any]:
        todo: list[Any] = []
        for item in items:
            answer, passages = item[0], item[1]
            b = item[2] if len(item) > 2 and item[2] is not None else (self.base if base is None else base)
            try:
                # a tuple or other iterable is a list of passages; a string is one text, never its characters
                listed = passages if isinstance(passages, (str, bytes, Mapping)) or not isinstance(passages, Iterable) \
                    else list(passages)
                todo.append((answer, normalise_passages(listed), b))
            except GuardInputError as e:
                if not isolate:
                    raise
                todo.append(e)
        return todo


class _Blocked(Exception):
    def __init__(self, report: GuardReport):
        self.report = report


def _policy(action: str | None, remove: bool, block_above: float | None, on_error: str) -> tuple[str, float, str]:
    """(action, block_above, on_error), checked: ``remove=True`` is ``action="remove"``; ``block`` needs a
    ``block_above`` in [0, 1)."""
    from citebound.guarding.report import ON_ERROR, POLICIES

    action = action or ("remove" if remove else "annotate")
    if action not in POLICIES:
        raise GuardInputError(f"action must be one of {list(POLICIES)}, got {action!r}")
    if remove and action != "remove":
        raise GuardInputError(f"remove=True contradicts action={action!r}")
    if on_error not in ON_ERROR:
        raise GuardInputError(f"on_error must be one of {list(ON_ERROR)}, got {on_error!r}")
    if action == "block":
        if block_above is None or isinstance(block_above, bool) or not 0 <= float(block_above) < 1:
            raise GuardInputError(f"action 'block' needs block_above in [0, 1) (the review budget past which an "
                                  f"answer is withheld), got {block_above!r}")
        return action, float(block_above), on_error
    if block_above is not None:
        raise GuardInputError("block_above is only for action='block'")
    return action, 1.0, on_error
