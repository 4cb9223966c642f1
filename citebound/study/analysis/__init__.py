"""The study's analyses: pure functions from scored pair tables to tables, one module per analysis.

Scored tables come from :func:`citebound.study.scored_tables.load_scored`: one row per pair with ``label``
(1 supported / 0 unsupported / NaN unknown) and, per verifier ``v``, ``score_v`` and ``verdict_v``
(True = supported).
"""
from citebound.study.analysis.agreement import agreement_sample, agreement_table
from citebound.study.analysis.citation_pr import citation_pr_table, sentence_citations
from citebound.study.analysis.conformal_eval import (
    budget_curve,
    calibration_arrays,
    calibration_size_ablation,
    coverage_table,
    mondrian_table,
    pac_ranks_table,
    review_budget,
)
from citebound.study.analysis.failure_kinds import (
    classify,
    failure_kinds_table,
    gold_agreement,
    gold_cases,
    proposal_pairs,
    sample_items,
)
from citebound.study.analysis.rates import unsupported_rates
from citebound.study.analysis.reattribution import lexical_overlap_by_label, random_recall, rank_hits, reattribution_tables
from citebound.study.analysis.scope import scope_table
from citebound.study.analysis.transfer import transfer_table
from citebound.study.analysis.validation import catch_rate_frontier, validation_table

__all__ = [
    "validation_table",
    "catch_rate_frontier",
    "unsupported_rates",
    "agreement_sample",
    "agreement_table",
    "calibration_arrays",
    "coverage_table",
    "calibration_size_ablation",
    "review_budget",
    "budget_curve",
    "mondrian_table",
    "pac_ranks_table",
    "transfer_table",
    "rank_hits",
    "random_recall",
    "reattribution_tables",
    "lexical_overlap_by_label",
    "scope_table",
    "sample_items",
    "proposal_pairs",
    "classify",
    "failure_kinds_table",
    "gold_cases",
    "gold_agreement",
    "sentence_citations",
    "citation_pr_table",
]
