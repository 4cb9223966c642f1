"""What the guard reports per answer: each citation's audit and evidence, and the counts."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from citebound.text.limits import GuardInputError

ACTIONS = ("verified", "reattributed", "flagged", "invalid", "unverified")
# what a report's citations may do (citebound guard --action): keep the answer with its markers rewritten,
# remove the sentences whose citations failed, or block the whole answer past a review budget
POLICIES = ("annotate", "remove", "block")
# what a citation that could not be checked (a verifier error or timeout, no score) becomes: "closed" marks
# it [N UNVERIFIED] and sends it to review; "open" (an explicit opt-in) leaves its marker as written.
# Either way it is counted as unverified, never as verified.
ON_ERROR = ("closed", "open")


@dataclass
class Evidence:
    """Where in a passage the verifier found its best support."""

    passage: int  # citation number of the passage (in the answer's base)
    start: int  # character span of the best window in the passage
    end: int
    text: str
    score: float | None


@dataclass
class CitationAudit:
    sentence_index: int
    claim: str
    cited: int  # citation number as written (in the answer's base)
    marker: str  # the marker as written, e.g. "[1-3]" or "[[2]](https://...)"
    spans: list[tuple[int, int]]  # where the marker(s) citing this target stand in the answer
    score: float | None
    action: str  # verified | reattributed | flagged | invalid | unverified (could not be checked)
    new_pointer: int | None = None
    new_score: float | None = None
    reason: str = ""
    evidence: Evidence | None = None  # best window of the cited passage (None when invalid)
    new_evidence: Evidence | None = None  # best window of the accepted passage, after re-attribution
    # re-attribution of a failed or invalid citation: how many other passages were tried, and the best of them
    # ({"passage": N, "score": s}) whether or not it passed
    candidates: int = 0
    best_candidate: dict[str, Any] | None = None
    # unverified because the guard could not read what the reader sees (an unreadable marker, text styled
    # invisible, a passage with no text a reader can see), not because a verifier failed: --on-error open does
    # not pass it
    unreadable: bool = False


@dataclass
class GuardReport:
    n_sentences: int = 0
    n_cited_sentences: int = 0
    n_citations: int = 0
    verified: int = 0
    reattributed: int = 0
    flagged: int = 0
    invalid: int = 0
    unverified: int = 0  # citations that could not be checked (verifier error or timeout, no score)
    removed_sentences: int = 0
    hidden_regions: int = 0  # hidden markup (comments, hidden elements) left out of every claim
    # sentences with words that cite nothing: nothing checked them (with uncited_policy "flag" they count
    # toward the review budget and --action block); their [start, end) in the answer
    uncited: int = 0
    uncited_policy: str = "flag"
    uncited_sentences: list[list[int]] = field(default_factory=list)
    # share of what the answer asserts that a person must review: flagged + invalid + unverified (failing
    # open: only unreadable markers) citations, + uncited sentences under uncited_policy "flag", over citations (+ those sentences)
    review_budget: float = 0.0
    blocked: bool = False  # --action block and the review budget passed --block-above: no content is given
    block_reason: str = ""
    rule: str = ""
    score_scale: str = ""  # what the verifier's score means (P(support) only where it is one)
    guarantee: str = ""
    # what is promised and whether it still looks like it holds (citebound.guarding.card)
    guarantee_card: dict[str, Any] = field(default_factory=dict)
    audit: list[CitationAudit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def set_review_budget(self, fail_open: bool = False) -> None:
        """review_budget from the counts: (flagged + invalid + unverified [failing open: only the unreadable
        markers, which no verifier failure explains] [+ uncited, under uncited_policy "flag"]) / (n_citations
        [+ uncited])."""
        extra = self.uncited if self.uncited_policy == "flag" else 0
        unread = sum(1 for a in self.audit if a.action == "unverified" and a.unreadable)
        review = self.flagged + self.invalid + (unread if fail_open else self.unverified) + extra
        total = self.n_citations + extra
        self.review_budget = review / total if total else 0.0


def failed(a: CitationAudit, fail_open: bool = False) -> bool:
    """Whether a citation does not pass as written: flagged, invalid, or unverified. Failing open
    (``--on-error open``), an unverified citation passes only where a verifier failure is why (no score, an
    error, a timeout); one the guard could not read (``unreadable``) fails either way."""
    return a.action in ("flagged", "invalid") or (a.action == "unverified" and (a.unreadable or not fail_open))


def why(a: Mapping[str, Any], rule: str) -> str:
    """One line on why a citation (an audit entry as a dict) did not pass as written: its reason or its score
    against the rule, and what re-attribution tried and found."""
    if a["action"] == "verified":
        return ""
    parts = [a["reason"]] if a.get("reason") else []
    if a.get("score") is not None and not a.get("reason"):
        parts.append(f"score {a['score']:.3g} fails the rule ({rule})")
    elif a.get("score") is None and not parts:
        parts.append("no score")
    if a["action"] == "reattributed":
        parts.append(f"moved to passage {a['new_pointer']}, which scores {a['new_score']:.3g} and passes")
    elif a["action"] in ("flagged", "invalid"):
        best = a.get("best_candidate")
        n = int(a.get("candidates") or 0)
        parts.append("re-attribution tried no other passage" if not n else
                     f"re-attribution tried {n} other passage{'s' * (n != 1)}: the best, [{best['passage']}], scores "
                     f"{best['score']:.3g}, which fails too" if best and best.get("score") is not None else
                     f"re-attribution tried {n} other passage{'s' * (n != 1)}: none could be scored")
    return "; ".join(parts)


def pooled_review_budget(reports: Any) -> float:
    """The review budget of several answers together: each report's own budget (its own on_error and uncited
    rule) weighted by its own denominator, citations plus, under "flag", uncited sentences. ``reports`` are
    :class:`GuardReport` objects or their dicts.

    >>> pooled_review_budget([{"review_budget": 0.5, "n_citations": 2, "uncited": 2, "uncited_policy": "flag"},
    ...                       {"review_budget": 0.0, "n_citations": 4, "uncited": 1, "uncited_policy": "ignore"}])
    0.25
    """
    def get(r: Any, k: str, default: Any) -> Any:
        return r.get(k, default) if isinstance(r, Mapping) else getattr(r, k, default)

    weights = [int(get(r, "n_citations", 0)) + (int(get(r, "uncited", 0)) if get(r, "uncited_policy", "flag") == "flag"
                                                else 0) for r in reports]
    total = sum(weights)
    return sum(float(get(r, "review_budget", 0.0)) * w for r, w in zip(reports, weights)) / total if total else 0.0


def normalise_passages(passages: Any) -> list[str]:
    """Accept a list of strings or of objects with ``text`` (and optional ``title``). A passage that is
    empty or blank is kept (a citation of it is 'unverified': there is nothing to check it against); one
    with no text at all is an error."""
    if not isinstance(passages, list):
        raise GuardInputError("'passages' (or 'ctxs') must be a list")
    out = []
    for i, p in enumerate(passages):
        text = p.get("text") if isinstance(p, Mapping) else p
        if not isinstance(text, str):
            raise GuardInputError(f"passage {i} has missing text (expected a string or {{'text': '...'}})")
        out.append(text)
    return out
