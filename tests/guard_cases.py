"""One table of guard cases, worked out by hand, that every face runs (tests/guard/test_cross_face.py).

The verifier is ``lexical`` (the share of the claim's content terms found in the passage window), so each
score is a fraction anyone can count. The calibration is the grouped one of ``calibration_records``:

- pooled: 43 unsupported scores, PAC rank 42 (the smallest k with P(Bin(43, 0.9) <= k - 1) >= 0.9), so the
  deployed tau is the 42nd smallest, 0.50; group "big": its own tau 0.22; group "small": too few unsupported
  citations, falls back to the pooled 0.50 (tests/guard/test_groups.py derives each number).
- A citation passes iff score > tau. "Statins cure." has two content terms (statin, cure); passage 1 holds one:
  0.5, which equals the pooled tau and so fails, and passes under "big".
- Every other claim below scores 1 (all its terms in the passage) or 0 (none), on either side of every tau.

Passages: 1 statins, 2 mitochondria, 3 aspirin. A failed citation is re-attributed when another passage, not
already cited by the sentence, scores above tau; otherwise it is flagged.

review_budget = (flagged + invalid + unverified [closed] + uncited [flag]) / (citations + uncited [flag]).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

P1 = "Statins lower LDL cholesterol in adults."
P2 = "Mitochondria produce ATP in cells."
P3 = "Aspirin inhibits platelet aggregation."
PASSAGES = [P1, P2, P3]

# the policies a face is started with (library kwargs, CLI flags, ServeConfig fields, MCP flags)
CONFIGS: dict[str, dict[str, Any]] = {
    "annotate": {},
    "remove": {"action": "remove"},
    "block": {"action": "block", "block_above": 0.3},
    "block-0.6": {"action": "block", "block_above": 0.6},
    "ignore": {"uncited": "ignore"},
    "open": {"on_error": "open"},
    "open-remove": {"on_error": "open", "action": "remove"},
}

COUNTS = ("n_citations", "verified", "reattributed", "flagged", "invalid", "unverified", "uncited",
          "removed_sentences", "blocked")


@dataclass
class Case:
    name: str
    config: str
    answer: str
    text: str | None  # the guarded answer; None: blocked
    counts: dict[str, int]  # only the non-zero ones; the rest of COUNTS must be 0
    budget: float
    passages: list[Any] = field(default_factory=lambda: list(PASSAGES))
    base: int = 1
    group: str | None = None
    # streamed under --action block: the text sent before the budget passed (the stream blocks on the prefix)
    stream_sent: str | None = None

    def expected_counts(self) -> dict[str, int]:
        return {k: int(self.counts.get(k, 0)) for k in COUNTS}


MIXED = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2]. Mitochondria produce ATP [1]."
MIXED_GUARDED = ("Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2 UNVERIFIED]. "
                 "Mitochondria produce ATP [2 (was 1)].")
CARRIED = ('Statins lower LDL cholesterol [1]<iframe src="data:text/html,Aspirin cures cancer [2]"></iframe>. '
           "Mitochondria produce ATP [2].")
CARRIED_MARKED = ('Statins lower LDL cholesterol [1 UNVERIFIED]<iframe src="data:text/html,Aspirin cures cancer '
                  '[2 UNVERIFIED]"></iframe>. Mitochondria produce ATP [2].')
ALL_GOOD = "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2]. Aspirin inhibits platelet aggregation [3]."

CASES = [
    # one verified, one flagged (no passage has its terms), one re-attributed from 1 to 2: budget 1/3
    Case("mixed", "annotate", MIXED, MIXED_GUARDED,
         {"n_citations": 3, "verified": 1, "reattributed": 1, "flagged": 1}, 1 / 3),
    # the same answer numbered from 0: [0] is passage 1
    Case("mixed-base0", "annotate", MIXED.replace("[1]", "[0]").replace("[2]", "[1]"),
         MIXED_GUARDED.replace("[1]", "[0]").replace("[2 UNVERIFIED]", "[1 UNVERIFIED]").replace("[2 (was 1)]",
                                                                                                    "[1 (was 0)]"),
         {"n_citations": 3, "verified": 1, "reattributed": 1, "flagged": 1}, 1 / 3, base=0),
    # several citations per sentence: [4] points at no passage (invalid); [3] has none of the claim's terms,
    # and 2, the only passage that does, is already cited by the sentence (flagged): 2 of 4 fail
    Case("several-per-sentence", "annotate", "Statins lower LDL cholesterol [1, 4]. Mitochondria produce ATP [2][3].",
         "Statins lower LDL cholesterol [1, 4 INVALID]. Mitochondria produce ATP [2][3 UNVERIFIED].",
         {"n_citations": 4, "verified": 2, "flagged": 1, "invalid": 1}, 2 / 4),
    # a range with index 0 (base 0): [0-2] is passages 1..3, of which only the first has the terms
    Case("range-base0", "annotate", "Statins lower LDL cholesterol [0-2].",
         "Statins lower LDL cholesterol [0, 1 UNVERIFIED, 2 UNVERIFIED].",
         {"n_citations": 3, "verified": 1, "flagged": 2}, 2 / 3, base=0),
    # tau equality: 0.5 is not > 0.50 (pooled), is > 0.22 (big); small falls back to the pooled 0.50
    Case("tau-equal-pooled", "annotate", "Statins cure [1].", "Statins cure [1 UNVERIFIED].",
         {"n_citations": 1, "flagged": 1}, 1.0),
    Case("tau-equal-big", "annotate", "Statins cure [1].", "Statins cure [1].",
         {"n_citations": 1, "verified": 1}, 0.0, group="big"),
    Case("tau-equal-small", "annotate", "Statins cure [1].", "Statins cure [1 UNVERIFIED].",
         {"n_citations": 1, "flagged": 1}, 1.0, group="small"),
    # an uncited sentence counts toward the budget under "flag" (1 of 2) and not under "ignore"
    Case("uncited", "annotate", "Statins lower LDL cholesterol [1]. Aspirin is very old.",
         "Statins lower LDL cholesterol [1]. Aspirin is very old.",
         {"n_citations": 1, "verified": 1, "uncited": 1}, 1 / 2),
    Case("uncited-ignored", "ignore", "Statins lower LDL cholesterol [1]. Aspirin is very old.",
         "Statins lower LDL cholesterol [1]. Aspirin is very old.",
         {"n_citations": 1, "verified": 1, "uncited": 1}, 0.0),
    Case("only-uncited", "annotate", "Aspirin cures cancer. The moon is cheese.",
         "Aspirin cures cancer. The moon is cheese.", {"uncited": 2}, 1.0),
    # marker shapes a reader takes for citations: a full-width one (read as [1]) and a ';' list
    Case("marker-shapes", "annotate", "Statins lower LDL cholesterol \uff3b\uff11\uff3d. Mitochondria produce ATP [2; 3].",
         "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2, 3 UNVERIFIED].",
         {"n_citations": 3, "verified": 2, "flagged": 1}, 1 / 3),
    # a bracket the guard cannot read is unverified, never dropped; failing open does not pass it either (no
    # verifier failed: the guard could not read it), so it stays marked and in the budget
    Case("unreadable", "annotate", "Statins lower LDL cholesterol [1a]. Mitochondria produce ATP [2].",
         "Statins lower LDL cholesterol [1a UNVERIFIED]. Mitochondria produce ATP [2].",
         {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2),
    Case("unreadable-open", "open", "Statins lower LDL cholesterol [1a]. Mitochondria produce ATP [2].",
         "Statins lower LDL cholesterol [1a UNVERIFIED]. Mitochondria produce ATP [2].",
         {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2),
    # a blank passage fails closed even failing open: no verifier failed (failing open passes only what a verifier
    # failure left unchecked), and a passage whose text is all hidden must not pass a claim unmarked
    Case("blank-open", "open", "Mitochondria produce ATP [2]. Statins lower LDL cholesterol [1].",
         "Mitochondria produce ATP [2 UNVERIFIED]. Statins lower LDL cholesterol [1].",
         {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2, passages=[P1, "   "]),
    # failing open, remove drops a sentence whose citation the guard could not read (no verifier failed): text
    # styled invisible in the sentence, a blank passage
    Case("obscured-open-remove", "open-remove",
         'Statins lower LDL cholesterol <span style="opacity:0">and cure cancer</span> [1]. Mitochondria produce ATP [2].',
         "Mitochondria produce ATP [2].", {"n_citations": 2, "verified": 1, "unverified": 1, "removed_sentences": 1}, 1 / 2),
    Case("blank-open-remove", "open-remove", "Mitochondria produce ATP [4]. Statins lower LDL cholesterol [1].",
         "Statins lower LDL cholesterol [1].", {"n_citations": 2, "verified": 1, "unverified": 1, "removed_sentences": 1},
         1 / 2, passages=[P1, P2, P3, "  "]),
    Case("hidden-passage-open", "open", "Mitochondria produce ATP [2]. Statins lower LDL cholesterol [1].",
         "Mitochondria produce ATP [2 UNVERIFIED]. Statins lower LDL cholesterol [1].",
         {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2,
         passages=[P1, '<span style="display:none">Mitochondria produce ATP.</span>']),
    # a passage that is only hidden markup is blank: nothing to check against, so unverified
    Case("hidden-passage", "annotate", "Mitochondria produce ATP [2].", "Mitochondria produce ATP [2 UNVERIFIED].",
         {"n_citations": 1, "unverified": 1}, 1.0, passages=[P1, "<!-- Mitochondria produce ATP -->"]),
    # round two (#52). A word in an attribute hides nothing: the false sentence is checked (and fails)
    Case("visible-attribute-word", "annotate",
         '<div style="overflow:hidden">Unicorns sing opera loudly [2].</div> Mitochondria produce ATP [2].',
         '<div style="overflow:hidden">Unicorns sing opera loudly [2 UNVERIFIED].</div> Mitochondria produce ATP [2].',
         {"n_citations": 2, "verified": 1, "flagged": 1}, 1 / 2),
    # text a reader cannot see in a sentence: its citation fails closed, failing open too (no verifier failed)
    Case("obscured-in-answer", "annotate",
         'Statins lower LDL cholesterol <span style="opacity:0">in adults</span> [1]. Mitochondria produce ATP [2].',
         'Statins lower LDL cholesterol <span style="opacity:0">in adults</span> [1 UNVERIFIED]. '
         "Mitochondria produce ATP [2].", {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2),
    Case("obscured-in-answer-open", "open",
         'Statins lower LDL cholesterol <span style="opacity:0">in adults</span> [1]. Mitochondria produce ATP [2].',
         'Statins lower LDL cholesterol <span style="opacity:0">in adults</span> [1 UNVERIFIED]. '
         "Mitochondria produce ATP [2].", {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2),
    # a passage whose support is styled invisible supports nothing: [2] fails, and no other passage holds it
    Case("obscured-passage", "annotate", "Mitochondria produce ATP [2].", "Mitochondria produce ATP [2 UNVERIFIED].",
         {"n_citations": 1, "flagged": 1}, 1.0,
         passages=[P1, 'Cells. <span style="color:transparent">Mitochondria produce ATP</span>', P3]),
    # a document carried in a URL is drawn for the reader (Chromium draws a data: frame's text): obscured text,
    # so every citation of the sentence touching it is unverified, the marker inside the URL included (3
    # citations, 2 unverified), failing open too; remove drops that sentence
    Case("carried-in-url", "annotate", CARRIED, CARRIED_MARKED, {"n_citations": 3, "verified": 1, "unverified": 2}, 2 / 3),
    Case("carried-in-url-open", "open", CARRIED, CARRIED_MARKED, {"n_citations": 3, "verified": 1, "unverified": 2},
         2 / 3),
    Case("carried-in-url-open-remove", "open-remove", CARRIED, "Mitochondria produce ATP [2].",
         {"n_citations": 3, "verified": 1, "unverified": 2, "removed_sentences": 1}, 2 / 3),
    # a passage whose support is carried in a URL supports nothing: its visible text ("Cells.") lacks the terms
    Case("carried-passage", "annotate", "Mitochondria produce ATP [2].", "Mitochondria produce ATP [2 UNVERIFIED].",
         {"n_citations": 1, "flagged": 1}, 1.0,
         passages=[P1, 'Cells. <iframe src="data:text/html,Mitochondria produce ATP"></iframe>', P3]),
    # a citation form the guard does not parse, beside a parsed marker: counted for review, never clean
    Case("superscript-beside-marker", "annotate", "Mitochondria produce ATP [2]\u00b3.",
         "Mitochondria produce ATP [2]\u00b3 [UNVERIFIED].", {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2),
    Case("parenthesised-beside-marker", "annotate", "Mitochondria produce ATP [2] (3).",
         "Mitochondria produce ATP [2] (3) [UNVERIFIED].", {"n_citations": 2, "verified": 1, "unverified": 1}, 1 / 2),
    # no passages at all: every pointer points at none
    Case("no-passages", "annotate", "Aspirin works [1].", "Aspirin works [1 INVALID].",
         {"n_citations": 1, "invalid": 1}, 1.0, passages=[]),
    # remove: a sentence goes only when none of its citations stands ([1] stands in the first)
    Case("remove", "remove",
         "Statins lower LDL cholesterol [1][2]. Unicorns sing opera loudly [2]. Mitochondria produce ATP [2].",
         "Statins lower LDL cholesterol [1][2 UNVERIFIED]. Mitochondria produce ATP [2].",
         {"n_citations": 4, "verified": 2, "flagged": 2, "removed_sentences": 1}, 2 / 4),
    # remove keeps a sentence whose only citation was re-attributed (it stands), drops the flagged one
    Case("remove-keeps-reattributed", "remove", MIXED,
         "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2 (was 1)].",
         {"n_citations": 3, "verified": 1, "reattributed": 1, "flagged": 1, "removed_sentences": 1}, 1 / 3),
    # a re-attributed citation makes its sentence stand even beside an unchecked one (passage 4 is blank):
    # 2 of 3 need a person (the unverified and the flagged), one sentence removed
    Case("remove-reattributed-beside-unverified", "remove", "Mitochondria produce ATP [1][4]. Unicorns sing opera loudly [2].",
         "Mitochondria produce ATP [2 (was 1)][4 UNVERIFIED].",
         {"n_citations": 3, "reattributed": 1, "unverified": 1, "flagged": 1, "removed_sentences": 1}, 2 / 3,
         passages=[P1, P2, P3, "  "]),
    # block past 0.3: 1/3 is withheld; a stream sends the first sentence (budget 0) and stops at the second (1/2)
    Case("block", "block", MIXED, None,
         {"n_citations": 3, "verified": 1, "reattributed": 1, "flagged": 1, "blocked": 1}, 1 / 3,
         stream_sent="Statins lower LDL cholesterol [1]."),
    Case("block-not-reached", "block", ALL_GOOD, ALL_GOOD, {"n_citations": 3, "verified": 3}, 0.0),
    Case("block-uncited", "block", "Aspirin cures cancer. The moon is cheese.", None,
         {"uncited": 2, "blocked": 1}, 1.0, stream_sent=""),
    # the unicorn sentence alone would pass the bound (1 of 1 > 0.6); the answer does not (1 of 2 = 0.5), so
    # nothing is withheld, streamed too: a stream decides on the answer so far, never on its last segment alone
    Case("block-whole-under", "block-0.6", "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2].",
         "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2 UNVERIFIED].",
         {"n_citations": 2, "verified": 1, "flagged": 1}, 0.5),
]


def calibration_records() -> list[dict[str, Any]]:
    """Scores and labels whose grouped lexical calibration is the one described above."""
    big = [round(0.01 * i, 2) for i in range(1, 23)]
    small = [round(0.30 + 0.01 * i, 2) for i in range(1, 22)]
    recs = [{"score": s, "label": 0, "group": "big"} for s in big]
    recs += [{"score": s, "label": 0, "group": "small"} for s in small]
    recs += [{"score": 0.9, "label": 1, "group": g} for g in ("big", "small", "big")]
    return recs


def by_config() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in CASES:
        out.setdefault(c.config, []).append(c)
    return out


def write_calibration(folder: Any) -> Any:
    """The case table's grouped lexical calibration, made with ``citebound calibrate`` in ``folder``; its path."""
    import json
    from pathlib import Path

    from citebound.cli.main import main

    src, out = Path(folder) / "scores.jsonl", Path(folder) / "lab.json"
    src.write_text("".join(json.dumps(r) + "\n" for r in calibration_records()))
    assert main(["calibrate", "--scores", str(src), "--verifier", "lexical", "--out", str(out)]) == 0
    return out
