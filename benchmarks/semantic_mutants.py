"""Realistic, behaviour-changing mutants (hand-written patches), each run against the fast tests of its
module; prints the kill rate per module and names every survivor.

mutmut's syntactic score (benchmarks/mutation.sh) counts mutants that often make no difference to a
reader's number; these are the bugs a reviewer plants: wrong denominators, a boundary off by one, a
dropped CSS class, swapped parameters. Each mutant is one exact text replacement in one file, with a
line on why it changes behaviour. The script works on a scratch copy of the tree and never edits the
checkout.

    python benchmarks/semantic_mutants.py            # all mutants (~5 minutes on 2 cores)
    python benchmarks/semantic_mutants.py --only kit # one module's

A mutant's own module's test files are a narrow net. For the whole fast tier's verdict at a fraction of its cost,
record which tests run which lines once, then run each mutant against the tests that ran its lines:

    pip install coverage   # not a dependency of citebound
    python -m coverage run --rcfile=benchmarks/coverage_contexts.rc -m pytest -q -m "not slow"   # ~9 min
    python benchmarks/semantic_mutants.py --round 12 --by-coverage .coverage-contexts
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    module: str  # the reporting module (row of the table)
    path: str
    old: str
    new: str
    why: str


G, C, R = "citebound/guarding/guard.py", "citebound/text/citations.py", "citebound/guarding/reattributors.py"
A, K, CF = "citebound/guarding/audit_page.py", "citebound/study/kit.py", "citebound/calibration/conformal.py"
FK, PR = "citebound/study/analysis/failure_kinds.py", "citebound/study/analysis/citation_pr.py"
TE = "citebound/training/evaluation.py"
AM, AR = "citebound/serving/api_messages.py", "citebound/serving/api_responses.py"
SP, PX, UP = "citebound/serving/stream_proxy.py", "citebound/serving/proxy.py", "citebound/serving/upstream.py"
SV, GR, CS = "citebound/serving/state.py", "citebound/serving/guard_routes.py", "citebound/cli/serve.py"
APP = "citebound/serving/app.py"
MR, MET = "citebound/serving/monitor_routes.py", "citebound/serving/metrics.py"
H, RV, LG = "citebound/serving/held.py", "citebound/verifiers/remote.py", "citebound/integrations/litellm_guardrail.py"
V9, CSS9, H9 = "citebound/text/visible.py", "citebound/text/css.py", "citebound/serving/held.py"
SP9, UP9, BH = "citebound/serving/stream_proxy.py", "citebound/serving/upstream.py", "citebound/scoring/bounded_http.py"
BI, TR, HD = "citebound/calibration/binomial.py", "citebound/verifiers/trained.py", "citebound/training/head.py"
GP, EM, LX = "citebound/verifiers/graph.py", "citebound/verifiers/embedding.py", "citebound/verifiers/lexical.py"
LJ, CE, IO = "citebound/verifiers/llm_judge.py", "citebound/scoring/chat_endpoint.py", "citebound/scoring/io.py"
RA, CV = "citebound/study/analysis/reattribution.py", "citebound/study/analysis/conformal_eval.py"
ST, GC, CFI = "citebound/calibration/stats.py", "citebound/calibration/groups.py", "citebound/calibration/files.py"
LO, SM, CO = "citebound/scoring/loader.py", "citebound/serving/models.py", "citebound/cli/common.py"
GV, LB, VB = "citebound/guarding/convert.py", "citebound/scoring/llm_backends.py", "citebound/verifiers/base.py"
HS = "citebound/scoring/hashing.py"
GN, PP = "citebound/study/generation.py", "citebound/study/prepare.py"
TN = "citebound/study/train_networks.py"
MUTANTS = [
    # the guard's report
    Mutant("guarding", G, "/ report.n_citations if report.n_citations else 0.0",
           "/ report.n_cited_sentences if report.n_cited_sentences else 0.0",
           "review budget over cited sentences instead of citations: wrong with several citations a sentence"),
    Mutant("guarding", G, '"invalid" if c.passage_index < 0 else "verified")', '"invalid" if c.passage_index <= 0 else "verified")',
           "the first passage's citations become invalid"),
    Mutant("guarding", G, "cited_here = {c.passage_index for c in plan.cites[a.sentence_index] if c.passage_index >= 0}",
           "cited_here = {a.cited - plan.base}",
           "re-attribution may move a pointer onto a passage the same sentence already cites"),
    Mutant("guarding", G, "if ok and (id(a) not in best or sc > best[id(a)][1]):", "if ok and id(a) not in best:",
           "the first accepted proposal wins instead of the best-scoring one"),
    Mutant("guarding", G, "passed = s > tau if tau is not None", "passed = s >= tau if tau is not None",
           "a score equal to tau passes: the split-conformal rule flags score <= tau"),
    Mutant("guarding", G, "            target = _target(c)\n", "            target = (_target(c), c.start)\n",
           "a repeated pointer in one sentence ([1][1]) counts as two citations"),
    Mutant("guarding", G, "ev.append(Evidence(i + plan.base,", "ev.append(Evidence(i + 1,",
           "evidence and new pointers ignore the answer's citation base"),
    Mutant("guarding", "citebound/guarding/rewrite.py", 'if all(a.action == "verified" for a in audits) and not unsafe:',
           'if audits[0].action == "verified" and not unsafe:',
           "a marker whose first citation is verified is left unchanged even when another in it failed"),
    # citation parsing and limits
    Mutant("citations", C, "new = range(lo, hi + 1) if hi >= lo else [lo, hi]",
           "new = range(lo, hi) if hi >= lo else [lo, hi]", "a range [2-4] loses its last number"),
    Mutant("citations", C, "idx if 0 <= idx < n_passages else -1", "idx if 0 <= idx <= n_passages else -1",
           "a pointer one past the last passage counts as valid"),
    Mutant("citations", C, "new = range(lo, hi + 1) if hi >= lo else [lo, hi]",
           "new = range(lo, hi + 1) if hi >= lo else list(range(hi, lo + 1))",
           "a reversed range [3-1] expands to every number between instead of naming its two ends"),
    Mutant("citations", C, "if max_range is not None and hi - lo + 1 > max_range:",
           "if max_range is not None and hi - lo > max_range:", "a range one past the limit is accepted"),
    Mutant("limits", "citebound/text/limits.py", "if in_sentence > self.max_citations_per_sentence:",
           "if in_sentence >= self.max_citations_per_sentence:", "a sentence exactly at the limit is refused"),
    Mutant("limits", "citebound/text/limits.py", "if len(passages) > self.max_passages:", "if len(passages) > self.max_passages + 1:",
           "one passage past the limit is accepted"),
    # re-attribution
    Mutant("reattributors", R, "bm25_index(passages, k1=self.k1, b=self.b)",
           "bm25_index(passages, k1=self.b, b=self.k1)", "k1 and b swapped"),
    Mutant("reattributors", R, "bm25_index(passages, k1=self.k1, b=self.b)", "bm25_index(passages)",
           "the configured k1 and b never reach the index"),
    Mutant("reattributors", R, "if int(i) not in exclude][:self.proposals]", "if int(i) not in exclude][:self.proposals - 1]",
           "one proposal fewer than configured"),
    Mutant("reattributors", R, "lambda claim, exclude: [j for j in range(len(passages)) if j not in exclude]",
           "lambda claim, exclude: list(range(len(passages)))", "the verifier re-attributor proposes already-cited passages"),
    # the audit page
    Mutant("audit_page", A, 'if a["action"] in ("flagged", "invalid")}', 'if a["action"] in ("flagged",)}',
           "sentences with an invalid citation are not highlighted for review"),
    Mutant("audit_page", A, 'cls = "sent review" if si in review else "sent"', 'cls = "sent"',
           "the review highlight's CSS class is dropped"),
    Mutant("audit_page", A, """f'<a class="cite {audit[j]["action"]}" """, """f'<a class="cite" """,
           "citation chips lose their outcome class (and colour)"),
    # conformal and statistics
    Mutant("conformal", CF, "return empirical_rank(n + 1, 1 - alpha)", "return empirical_rank(n, 1 - alpha)",
           "the finite-sample +1 correction is lost: k = ceil(n(1-alpha))"),
    Mutant("conformal", CF, "    if k > n:\n", "    if k >= n:\n", "tau becomes +inf one rank too early"),
    Mutant("conformal", CF, "return ~(s > tau)", "return s < tau", "a score equal to tau is not flagged"),
    Mutant("stats", "citebound/calibration/stats.py", "den = 2 * a + b + c\n", "den = 2 * a + b + c + d\n",
           "positive-specific agreement divides by every pair"),
    Mutant("calibration", "citebound/calibration/files.py", "float(np.mean(scores[labels == 1] <= guard.tau))",
           "float(np.mean(scores[labels == 1] < guard.tau))", "supported citations at exactly tau not counted as flagged"),
    # the kit's citation precision and recall
    Mutant("kit", K, "prec = len({i for i in ids if 1 <= i <= n_passages})", "prec = len({i for i in ids if 1 <= i < n_passages})",
           "the last passage's id counts as out of range"),
    Mutant("kit", K, "if len(s.strip()) > min_chars]", "if len(s.strip()) >= min_chars]",
           "a sentence of exactly min_chars characters is counted"),
    Mutant("kit", K, "/ len(cued) if cued else 0.0", "/ len(kit_sentences(answer, min_chars)) if cued else 0.0",
           "recall over every sentence instead of the cued ones"),
    Mutant("kit", K, "/ len(ids) if ids else 1.0", "/ len(ids) if ids else 0.0",
           "an answer citing nothing gets precision 0 instead of the kit's 1"),
    # the scoring protocol
    Mutant("verifiers.base", "citebound/verifiers/base.py", "    if starts[-1] != n_chars - window_chars:\n",
           "    if False:\n", "the passage's tail is never windowed (silently cut)"),
    Mutant("verifiers.base", "citebound/verifiers/base.py", "verdict[i] = bool(u_verdict[ids].any())",
           "verdict[i] = bool(u_verdict[ids].all())", "a pair is supported only if every window is"),
    Mutant("verifiers.base", "citebound/verifiers/base.py", "u_verdict = u_score >= float(threshold)",
           "u_verdict = u_score > float(threshold)", "a score exactly at the verifier's threshold fails"),
    # labelling, the service, stacked scoring, calibrate's sample record
    Mutant("labelling", "citebound/labelling/store.py", "take = order if n is None else order[:n]",
           "take = order if n is None else order[:n - 1]", "one citation fewer than asked is sampled"),
    Mutant("labelling", "citebound/labelling/store.py", "need = math.ceil(1 / alpha - 1)", "need = math.ceil(1 / alpha)",
           "the panel asks for one unsupported label more than a finite tau needs"),
    Mutant("labelling", "citebound/labelling/store.py", '("observed_agreement", (ta + td) / n', '("observed_agreement", (ta + tb) / n',
           "observed agreement counts a disagreement cell instead of both-unsupported"),
    Mutant("labelling", "citebound/labelling/store.py", "last = self.records.pop()", "last = self.records.pop(0)",
           "undo removes the first label instead of the last"),
    Mutant("service", "citebound/serving/batcher.py", "            at += k\n", "            at = k\n",
           "merged requests get each other's scores"),
    Mutant("service", "citebound/serving/guard_routes.py",
           'totals["review_budget"] = (totals["flagged"] + totals["invalid"]) / totals["n_citations"]',
           'totals["review_budget"] = (totals["flagged"] + totals["invalid"]) / len(out)',
           "a batch's review budget per answer instead of per citation"),
    Mutant("scoring", "citebound/scoring/loader.py", 'reason = [r or ("" if np.isfinite(x) else "missing_feature")',
           'reason = [r or "missing_feature"', "every stacked pair without a base reason is marked missing_feature"),
    Mutant("cli", "citebound/cli/calibrate.py", '"not_labelled": int(sizes[0]) - labelled,',
           '"not_labelled": int(sizes[0]) - len(labels),', "can't-tell labels counted as not labelled too"),
    # analyses
    Mutant("analysis", "citebound/study/analysis/validation.py",
           'ci_cols("specificity", d / (b + d) if b + d else np.nan', 'ci_cols("specificity", d / (c + d) if c + d else np.nan',
           "specificity over the wrong column of the 2x2 table"),
    Mutant("analysis", "citebound/study/analysis/rates.py", '"unsupported_rate": float(succ.sum() / tot.sum())',
           '"unsupported_rate": float((succ / tot).mean())', "mean of per-item rates instead of the pooled rate"),
    # failure kinds, citation P/R, the trained verifier's selection
    Mutant("failure_kinds", FK, 'misattributed_share", n_mis / n_unsup if n_unsup',
           'misattributed_share", n_mis / len(c) if len(c)', "misattributed share over all citations, not the unsupported"),
    Mutant("failure_kinds", FK, 'cited = set(g["passage_index"].astype(int))', "cited = set()",
           "proposals may include a passage the sentence already cites (the guard never proposes one)"),
    Mutant("failure_kinds", FK, "(lab == 0).sum() < 2:", "(lab == 0).sum() < 1:",
           "gold sentences with one wrong passage make ungrounded cases with no proposal at all"),
    Mutant("failure_kinds", FK, 'flagged = cases[[not verdict[p] for p in cases["cited_pair"]]] if len(cases) else cases',
           "flagged = cases", "cases whose wrong citation the verifier accepts are classed too"),
    Mutant("citation_pr", PR, 'd = d.drop_duplicates(["sentence_id", "passage_index"])', "d = d.copy()",
           "a passage cited twice by one sentence counts twice"),
    Mutant("citation_pr", PR, 'np.where(out["supported"], out["n_citations"] - out["n_accepted"], 0)',
           'out["n_citations"] - out["n_accepted"]', "every rejected citation counts as irrelevant, also in unsupported sentences"),
    Mutant("citation_pr", PR, '("recall", "sup", "sent")', '("recall", "sup", "cit")', "recall CI over citations"),
    Mutant("train_verifier", TE, 'if not (r["delta"] >= margin', 'if not (r["delta"] > margin',
           "a gain exactly at the margin is refused"),
    Mutant("train_verifier", TE, 'loso[loso["delta"] < 0].iterrows()', 'loso[loso["delta"] <= 0].iterrows()',
           "a tie with embedding on a left-out source blocks adoption"),
    Mutant("train_verifier", TE, "best = max(grid, key=lambda c:", "best = min(grid, key=lambda c:",
           "C chosen by the worst transfer"),
    # ---- round 3 (2026-12-02): the service and proxy, limits, labelling, model digests, training, analyses.
    # Written before their tests; benchmarks/MUTATION.md gives the first-round and final kill rates.
    Mutant("service", "citebound/serving/batcher.py", "ps.best_window[at:at + k]", "ps.best_window[:k]",
           "merged requests get the first request's evidence windows (scores stay right)"),
    Mutant("service", "citebound/serving/held.py", '"X-Citebound-Flagged": str(report.flagged)',
           '"X-Citebound-Flagged": str(report.flagged + report.invalid)', "a summary header counts invalid as flagged"),
    Mutant("service", "citebound/serving/held.py", "        state.cfg.limits.check_passages(passages)\n", "",
           "the proxy checks the passages only after it has paid for the upstream call"),
    Mutant("service", "citebound/serving/upstream.py", "    return upstream, redact_url(upstream)", "    return upstream, upstream",
           "upstream credentials echoed to clients"),
    Mutant("service", "citebound/serving/upstream.py", "    if r.status_code != 200:", "    if r.status_code >= 500:",
           "an upstream 4xx is read as an answer"),
    Mutant("service", "citebound/serving/batcher.py", "            for j in jobs:\n                self._score([j])",
           "            for j in jobs:\n                _settle(j.future, exception=e)",
           "one request's verifier error fails its batch-mates"),
    Mutant("service", "citebound/scoring/deadline.py", "return all(t is not None and t.cancelled for t in self.tokens)",
           "return any(t is not None and t.cancelled for t in self.tokens)",
           "one timed-out request stops its batch-mates' scoring"),
    Mutant("service", "citebound/serving/app.py", "            if n > self.limit:", "            if n >= self.limit:",
           "a body exactly at max_request_bytes is refused"),
    Mutant("service", "citebound/serving/guard_routes.py", "float(len(out) - len(done))", "float(len(out))",
           "a batch's failed_answers counts every answer"),
    Mutant("service", "citebound/guarding/guard.py", "        for i, r in zip(ok, done):", "        for i, r in enumerate(done):",
           "a batch's results shift onto the wrong answers when one before them fails"),
    Mutant("service", "citebound/serving/registry.py", "                check_verifier(cal, self.scorer.name, self.scorer.hash, str(path))\n",
           "", "a calibration made with another verifier is served"),
    Mutant("service", "citebound/serving/score_routes.py", "        except TimeoutError:", "        except ValueError:",
           "/v1/score past its timeout answers 500"),
    Mutant("limits", "citebound/text/limits.py", "if len(answer) > self.max_answer_chars:", "if len(answer) >= self.max_answer_chars:",
           "an answer exactly at max_answer_chars is refused"),
    Mutant("limits", "citebound/text/citations.py", "if budget is not None and len(ids) + len(new) > budget:",
           "if budget is not None and len(ids) > budget:", "a marker expands past the per-sentence limit before it is stopped"),
    Mutant("limits", "citebound/text/limits.py", "            if v > self.CEILINGS[f.name]:", "            if v > 10 * self.CEILINGS[f.name]:",
           "a limit may be raised past its hard ceiling"),
    Mutant("limits", "citebound/text/visible.py", "        depth += -1 if m.group(1) else 1", "        depth -= 1 if m.group(1) else 0",
           "a nested hidden element ends at the first close tag: hidden text reaches the claim"),
    Mutant("limits", "citebound/text/visible.py", 'return scheme is None or scheme.group(1) in ("http", "https")',
           'return scheme is None or scheme.group(1) != "javascript"', "data: link targets pass"),
    Mutant("labelling", "citebound/labelling/store.py", 'for key in ("sample_seed", "sample_size", "input_sha256", "verifier_hash"):',
           'for key in ("sample_seed", "sample_size", "verifier_hash"):', "a resume accepts a labels file made from another input"),
    Mutant("labelling", "citebound/labelling/store.py", "if len(own) == len(ids) and len(set(own)) == len(own):",
           "if len(own) == len(ids):", "answers sharing an id share item ids"),
    Mutant("labelling", "citebound/labelling/store.py", 'if rec.get("label", "missing") != JUDGEMENTS[rec["judgement"]]',
           'if rec.get("label", "missing") is None', "a hand-edited label that contradicts its judgement is accepted"),
    Mutant("labelling", "citebound/labelling/store.py", "        if not 0 <= cited - base < len(passages):",
           "        if not 0 <= cited - base <= len(passages):", "an echo record citing one past its passages crashes later"),
    Mutant("labelling", "citebound/labelling/app.py", "            if origin is not None and origin not in origins:",
           "            if origin is None and origin not in origins:", "another site's page may change labels"),
    Mutant("labelling", "citebound/labelling/app.py", 'if request.headers.get("host", "") not in hosts:',
           'if request.headers.get("host", "") in ("",):', "any Host header is accepted (DNS rebinding)"),
    Mutant("labelling", "citebound/cli/label.py", "todo = [it for it in sample if it.item_id not in done and it.score is None]",
           "todo = [it for it in sample if it.score is None]", "a resume scores what is already labelled"),
    Mutant("labelling", "citebound/cli/guard.py", "result.update(answer=answer, passages=passages, line=lineno,",
           "result.update(answer=answer, passages=chunk[-1][3], line=lineno,",
           "--echo-input writes the batch's last answer's passages for every answer"),
    Mutant("labelling", "citebound/calibration/files.py", '    if not math.isfinite(cal["tau"]):', '    if math.isnan(cal["tau"]):',
           "an infinite tau is accepted at load"),
    Mutant("hashing", "citebound/scoring/hashing.py", "parts = [_file_digest(str(f.resolve()), f.stat().st_mtime_ns, f.stat().st_size)",
           "parts = [_file_digest(str(f.resolve()), 0, f.stat().st_size)",
           "a digest cache keyed by size: a retrained head of the same size keeps its old hash"),
    Mutant("hashing", "citebound/scoring/hashing.py", "return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]",
           "return hashlib.sha256(path.encode()).hexdigest()[:16]", "a model's digest follows its path, not its bytes"),
    Mutant("training", TE, "best = max(grid, key=lambda c: (np.nan_to_num(loso_mean[c], nan=-1.0), -c))",
           "best = max(grid, key=lambda c: (np.nan_to_num(loso_mean[c], nan=-1.0), c))",
           "a tie in the choice of C goes to the weakest regularisation"),
    Mutant("training", TE, "    keys = [claim_key(c) for c in claims]\n    uniq", "    keys = [str(c) for c in claims]\n    uniq",
           "copies of a claim that differ in case or punctuation land in different folds"),
    Mutant("training", "citebound/training/own.py", '    kept, removed = dedupe_against(pairs, {n: e["claim"].tolist() for n, e in evals.items()})',
           '    kept, removed = pairs, dedupe_against(pairs, {n: e["claim"].tolist() for n, e in evals.items()})[1]',
           "citebound train counts the evaluation claims but trains on them"),
    Mutant("analysis", "citebound/study/analysis/_common.py", '        pooled.append(d.assign(item_id=source + "|" + d["item_id"].astype(str)))',
           "        pooled.append(d)", "pooled rows' item ids collide across sources"),
    # ---- round 4 (2026-12-02, #45): chosen from the code and the issue's classes before re-reading the tests
    Mutant("card", "citebound/guarding/card.py", 'return self.on_void == "flag-all" and self.state == "void"',
           'return self.on_void == "flag-all" and self.state != "ok"',
           "the action taken on void also fires on suspect (one face's rule, all faces)"),
    Mutant("mcp", "citebound/serving/mcp_server.py", "judge_pair(guard.scorer, claim, passage, guard.threshold())",
           "judge_pair(guard.scorer, claim, passage, guard.tau)",
           "verify_citation ignores the current threshold (flag-all, groups) and uses the calibration's"),
    Mutant("service", "citebound/serving/proxy.py", "base = 1 if extra.citation_base is None else extra.citation_base",
           "base = 1", "--passages-prompt numbers a 0-based answer's passages from 1"),
    Mutant("ltt", "citebound/calibration/ltt.py", "ok = np.cumprod(p[order] <= delta).astype(bool)",
           "ok = (p[order] <= delta).astype(bool)", "fixed-sequence testing does not stop at its first acceptance"),
    Mutant("guarantees", "citebound/study/analysis/guarantees.py", "violations += bool((fdr[ok] > q).any())",
           "violations += bool((fdr[ok] > q).all())",
           "the precision analysis counts a violation only when every certified tau violates"),
    Mutant("guarantees", "citebound/study/analysis/guarantees.py", "violations += bool(bad[hit].any())",
           "violations += bool(bad[hit].all())", "the LTT analysis counts a violation only when every certified tau violates"),
    Mutant("guarantees", "citebound/study/analysis/guarantees.py",
           "stream = np.where(sup, rng.choice(pool[1], (streams, length)), rng.choice(pool[0], (streams, length)))",
           "stream = np.where(sup, rng.choice(ref[1], (streams, length)), rng.choice(ref[0], (streams, length)))",
           "the alarm's false-suspect streams drawn from the reference half (evaluated on what it was fitted on)"),
    Mutant("report", "citebound/guarding/core.py",
           'stands = {a.sentence_index for a in audits if a.action in ("verified", "reattributed")',
           'stands = {a.sentence_index for a in audits if a.action in ("verified",)',
           "--action remove drops a sentence whose only surviving citation was re-attributed"),
    Mutant("report", "citebound/guarding/report.py", "total = self.n_citations + extra",
           "total = self.n_citations + self.uncited", "the review budget's denominator counts uncited sentences under ignore"),
    Mutant("report", "citebound/guarding/report.py", "review = self.flagged + self.invalid + (unread if fail_open else self.unverified) + extra",
           "review = self.flagged + self.invalid + (0 if fail_open else self.unverified) + extra",
           "an unreadable marker passes unchecked under --on-error open"),
    Mutant("report", "citebound/guarding/report.py", 'weights = [int(get(r, "n_citations", 0)) + (int(get(r, "uncited", 0)) if get(r, "uncited_policy", "flag") == "flag"',
           'weights = [int(get(r, "n_citations", 0)) + (int(get(r, "uncited", 0)) if True',
           "the pooled budget weighs ignored uncited sentences"),
    Mutant("models", "citebound/models/__init__.py", "if where == \"shipped\" and digest != CONTRADICTION:",
           "if where == \"shipped\" and digest is None:", "the contradiction head's digest is never checked against its pin"),
    Mutant("labelling", "citebound/labelling/store.py",
           'b = base if rec.get("citation_base") is None else int(rec["citation_base"])', "b = base",
           "a labelling record's own citation base is ignored"),
    Mutant("eprocess", "citebound/calibration/eprocess.py", "return k * np.log1p(lam * (1 - alpha)) + (m - k) * np.log1p(-lam * alpha)",
           "return k * np.log1p(lam * (1 - alpha)) + (m - k - 1) * np.log1p(-lam * alpha)",
           "the label e-process counts one catch too few (an off-by-one in the wealth)"),
    Mutant("eprocess", "citebound/calibration/eprocess.py", "if not self.void and self.log_value >= math.log(1 / self.delta):",
           "if not self.void and self.log_value >= math.log(1 / self.delta) - 0.5:",
           "the label test voids below 1/delta"),
    Mutant("closed_loop", "citebound/cli/monitor.py", 'passed = rec["guard_action"] == "verified"',
           'passed = rec["guard_action"] != "flagged"', "monitor --labels counts a re-attributed citation as passed"),
    Mutant("closed_loop", "citebound/cli/calibrate.py", "if r.carried and all(h == want and is_score(sc) for sc, h in r.carried):",
           "if r.carried and any(h == want and is_score(sc) for sc, h in r.carried):",
           "calibrate reuses the labels' scores when only some carry this verifier's hash"),
    Mutant("mcp", "citebound/serving/mcp_server.py", '        if a["action"] == "verified":\n            continue',
           '        if a["action"] in ("verified", "reattributed"):\n            continue',
           "the compact MCP result leaves out re-attributed citations"),
    Mutant("audit_page", A, 'return bool(r.get("uncited_sentences")) or bool(r.get("blocked")) or any(',
           'return bool(r.get("blocked")) or any(', "the audit page's filter hides answers whose only problem is uncited"),
    Mutant("service", "citebound/serving/proxy.py", "if n is not None and n != 1:", "if n is not None and n > 2:",
           "the proxy lets n=2 through, guarding only the first choice"),
    Mutant("mcp", "citebound/serving/mcp_server.py", 'return {"score": ev.score, "verdict": "passes" if passed else "fails"',
           'return {"score": ev.score, "verdict": "passes" if ev.score > 0.5 else "fails"',
           "verify_citation's verdict from a fixed 0.5, not the guard's rule"),
    Mutant("contradiction", "citebound/verifiers/contradiction.py", "return emb - (p < veto_below).astype(float)",
           "return emb - (p <= veto_below).astype(float)", "the veto fires at exactly veto_below"),
    Mutant("precision", "citebound/calibration/precision.py", "level = delta / (2 * len(grid))", "level = delta / len(grid)",
           "the precision bound's union bound forgets it bounds two rates per tau"),
    Mutant("report", "citebound/guarding/core.py", "        a.candidates += 1\n",
           "        a.candidates += int(bool(ok))\n", "the report's re-attribution tries count only the passing ones"),
    Mutant("cli", "citebound/cli/guard.py", '            self.budgets.append({k: getattr(report, k) for k in ("review_budget", "n_citations", "uncited",',
           '            self.budgets.append({k: getattr(report, k) for k in ("review_budget", "n_citations", "n_citations",',
           "the CLI's pooled budget weighs answers by citations only"),
    # ---- round 5 (2026-12-03): this session's code (disconnects, the SSE reader, credentials, strict readers,
    # MCP numbers, the graph's assembly, labels on the transfer setting) and #45's classes not planted before.
    # Listed before the session's new suites were re-read; their author wrote both (benchmarks/MUTATION.md).
    Mutant("service", "citebound/serving/state.py", "        gone = CLIENT_GONE.get()", "        gone = None",
           "a client that disconnects keeps holding the verifier (its work is not cancelled)"),
    Mutant("security", "citebound/serving/upstream.py",
           'upstream = split_userinfo(state.cfg.upstream or "")[0].rstrip("/")', 'upstream = (state.cfg.upstream or "").rstrip("/")',
           "the upstream URL keeps its credentials (httpx then logs them with every request)"),
    Mutant("security", "citebound/serving/monitor_routes.py",
           '403: {"description": "the service has no admin token"}},\n             dependencies=[Depends(admin)])\n'
           '    async def reset(',
           '403: {"description": "the service has no admin token"}})\n    async def reset(',
           "reset reads its body before the token: an unauthenticated request learns the schema (422)"),
    Mutant("security", "citebound/labelling/app.py", "esc(p.slice(it.window_start, it.window_end))",
           "p.slice(it.window_start, it.window_end)", "the labelling page inserts the evidence window unescaped"),
    Mutant("security", "citebound/models/__init__.py", '    if digest != pinned:\n        raise GraphTampered(f"{model}',
           '    if digest != record["sha256"]:\n        raise GraphTampered(f"{model}',
           "the graph's digest is checked against its own graph.json instead of the pin"),
    Mutant("cli", "citebound/cli/inputs.py", "        data = strict_json(text)", "        data = json.loads(text)",
           "a .json input accepts NaN and Infinity (the JSONL path stays strict)"),
    Mutant("mcp", "citebound/serving/mcp_server.py",
           "parse_int=lambda t: int(t) if len(t) <= 4000 else bad)", "parse_int=int)",
           "MCP answers a 5,000-digit number with a parse error whose id is null (the host waits for ever)"),
    Mutant("service", "citebound/serving/app.py", 'stack += [(f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v)))]',
           'stack += [(f"{path}.{i}", x) for i, x in reversed(list(enumerate(v)))]',
           "a non-finite number inside a list is named with a dot, not its index (answers.0.id)"),
    Mutant("models", "citebound/models/build.py", "    if digest != SKELETON_SHA:", "    if digest is None:",
           "the graph is assembled from a skeleton whatever its digest"),
    Mutant("guarantees", "citebound/study/analysis/guarantees.py", "k = np.cumsum(order_labels & order_missed, axis=1)",
           "k = np.cumsum(order_missed, axis=1)", "the label test on transfer counts passed supported citations as misses"),
    Mutant("service", "citebound/serving/batcher.py", "                n += len(job.claims)", "                n += 1",
           "the batcher counts requests instead of units toward max_batch_units"),
    Mutant("cli", "citebound/cli/convert.py", "out.write(json.dumps(finite_only(rec, nonfinite)) + \"\\n\")",
           "out.write(json.dumps(rec) + \"\\n\")", "convert writes a released file's NaN into its JSON output"),
    # ---- round 6 (2026-12-03, #56's kinds: a merged batch, the one right threshold among safe ones, a
    # boundary at exactly the level, a pin never compared, the export switch). Written with their tests by
    # the same person, after them: each shows its test fails when its target breaks (benchmarks/MUTATION.md).
    Mutant("batcher", "citebound/serving/batcher.py", "deadline.AnyOf([j.token for j in jobs])",
           "deadline.AllOf([j.token for j in jobs])", "a merged call stops only when every member has left"),
    Mutant("batcher", "citebound/serving/batcher.py", "            at += k", "            at += 1",
           "after a merged call, the second request's slice starts one pair after the first's start"),
    Mutant("batcher", "citebound/serving/batcher.py", "                for j in gone or jobs:",
           "                for j in jobs:", "the members that stayed are failed with the leaver's Cancelled"),
    Mutant("ltt", "citebound/calibration/ltt.py", "ok = np.cumprod(p[idx] <= delta / (m - np.arange(m)))",
           "ok = np.cumprod(p[idx] <= delta / (m - np.arange(m) + 1))", "Holm's steps one hypothesis off"),
    Mutant("ltt", "citebound/calibration/ltt.py", "ok = np.cumprod(p[order] <= delta)", "ok = (p[order] <= delta)",
           "the fixed sequence goes on past its first failure"),
    Mutant("ltt", "citebound/calibration/ltt.py", "        out.tau = min(out.certified)", "        out.tau = max(out.certified)",
           "LTT deploys the largest certified tau (safe, but flags the most supported citations)"),
    Mutant("ltt", "citebound/calibration/ltt.py", "    return p <= delta / m", "    return p < delta / m",
           "Bonferroni refuses a p-value exactly at delta / m"),
    Mutant("models", "citebound/models/build.py", "        if not unpinned and digest != pinned:",
           "        if False and not unpinned and digest != pinned:", "build() never compares the graph it built with the pin"),
    Mutant("observability", "citebound/serving/observability.py", '    if "none" in exporters:\n        return False\n', "",
           "OTEL_TRACES_EXPORTER=none does not turn span export off"),
    Mutant("observability", "citebound/serving/observability.py", "client, method, path, _version, status = args",
           "client, path, method, _version, status = args", "a JSON access line's method and path swapped"),
    # ---- round 7 (2026-12-04): chosen from this turn's and last turn's code (visibility, forms, the stores,
    # the config file, readiness, the API adapters, citations as data, the upstream client, the served
    # verifier, the monitor) by reading the code, before re-reading any test; the first run is reported in
    # benchmarks/MUTATION.md.
    Mutant("css", "citebound/text/css.py", "if px is not None and abs(px) >= 1000:", "if px is not None and px >= 1000:",
           "a negative offset (left:-9999px) no longer obscures: text moved off screen to the left passes"),
    Mutant("css", "citebound/text/css.py", '    elif vis == "visible":\n        invisible = False\n', "",
           "a child's visibility:visible does not undo its parent's hidden: text a reader sees is blanked"),
    Mutant("css", "citebound/text/css.py", "    elif colour is None and unreadable((0, 0, 0, 1.0), backdrop):\n        obscured = True\n", "",
           "default (black) text on a black background is not obscured"),
    Mutant("css", "citebound/text/css.py", 'if "hidden" in overflow or "clip" in overflow or', 'if "hidden" in overflow or',
           "a 1px box with overflow:clip does not obscure"),
    Mutant("css", "citebound/text/css.py", "obscured |= px is not None and px < 4 or", "obscured |= px is not None and px < 1 or",
           "a 2px font is readable"),
    Mutant("css", "citebound/text/css.py", "    if colour[3] < 0.1:\n        return True\n", "",
           "a nearly transparent colour (alpha 0.05) counts as readable when its channels contrast"),
    Mutant("visible", "citebound/text/visible.py", "        if name not in attrs and len(attrs) < MAX_ATTRS:",
           "        if len(attrs) < MAX_ATTRS:", "a repeated attribute's last value wins (a browser keeps the first)"),
    Mutant("visible", "citebound/text/visible.py", "return OBSCURED if self.tree or self.broken else HIDDEN",
           "return HIDDEN", "hidden text inside a table (which may be foster-parented out) is blanked, not checked"),
    Mutant("visible", "citebound/text/visible.py", "        if len(self.stack) >= MAX_DEPTH:", "        if len(self.stack) > MAX_DEPTH:",
           "one element past the depth limit is still trusted"),
    Mutant("visible", "citebound/text/visible.py", "        lo = max(lo, pos)\n", "",
           "overlapping blanked spans: the second re-emits text already blanked (length changes)"),
    Mutant("forms", "citebound/text/forms.py", r'_SMALL_NUM = r"\s*\d{1,3}(?:', r'_SMALL_NUM = r"\s*\d{1,2}(?:',
           "a three-digit parenthesised number (123) is not sent to review"),
    Mutant("forms", "citebound/text/forms.py", "k = max(bisect.bisect_right(starts, lo) - 1, 0)", "k = max(bisect.bisect_right(starts, lo), 0)",
           "a form inside a sentence (not at its start) marks the next sentence instead"),
    Mutant("forms", "citebound/text/forms.py", "            if sents[k].end > lo:", "            if sents[k].end >= lo:",
           "a form right after a sentence's end also marks that sentence"),
    # the stores, the config file, readiness
    Mutant("state", "citebound/calibration/state.py", 'db.execute("BEGIN IMMEDIATE")', 'db.execute("BEGIN")',
           "a deferred transaction: two processes read the same value and one update is lost or fails"),
    Mutant("state", "citebound/calibration/state.py", '            if "not a state object" not in str(e):  # a bad row is that key\'s problem, not the store\'s\n                self.available, self.reason = False, str(e)',
           "            self.available, self.reason = False, str(e)", "one bad row makes the whole store unavailable"),
    Mutant("state", "citebound/calibration/state.py", '            self.inner.ping()\n            self.available, self.reason = True, ""',
           "            self.inner.ping()", "a store that came back stays unavailable until a restart"),
    Mutant("state", "citebound/calibration/state.py", 'url.removeprefix("sqlite:///") if url.startswith("sqlite:///")',
           'url.removeprefix("sqlite://") if url.startswith("sqlite:///")', "sqlite:///rel.db opens /rel.db"),
    Mutant("config", "citebound/cli/config_file.py", "            if key in typed:\n                continue  # the command line wins\n", "",
           "the config file overrides a flag given on the command line"),
    Mutant("config", "citebound/cli/config_file.py", '    layers.append(("environment", from_env))\n', '    layers.insert(0, ("environment", from_env))\n',
           "the config file overrides the environment (the environment must win)"),
    Mutant("readiness", "citebound/serving/app.py", '(store_down and scope == "all")', '(store_down and scope == "verdicts")',
           "/readyz says ready while the store is down, and ?scope=verdicts not"),
    # the API adapters and citations as data
    Mutant("structured", "citebound/guarding/structured.py", '"passage": a.cited if a.cited >= 0 else None',
           '"passage": a.cited if a.cited > 0 else None', "a citation of passage 0 (base 0) reports no passage"),
    Mutant("structured", "citebound/guarding/structured.py", '(a.action == "unverified" and (a.unreadable or not fail_open))',
           '(a.action == "unverified" and not fail_open)', "--on-error open passes a citation with nothing to check"),
    Mutant("structured", "citebound/guarding/structured.py", "        if k >= 0 and pos < uncited[k][1]:", "        if k >= 0 and pos <= uncited[k][1]:",
           "a citation attached just after an uncited sentence's end makes it cited"),
    Mutant("structured", "citebound/guarding/structured.py", "    for k, text in enumerate(ext):  # a quoted text that is one of the request's passages is that passage\n        seen.setdefault(text, k)\n",
           "", "a quoted text equal to a request passage becomes a new passage"),
    Mutant("structured", "citebound/guarding/structured.py", "        report.n_cited_sentences += len(now_cited)\n", "",
           "sentences a structured citation cites are not counted as cited sentences"),
    Mutant("held", "citebound/serving/held.py", '"X-Citebound-Flagged": str(report.flagged),\n            "X-Citebound-Invalid": str(report.invalid)',
           '"X-Citebound-Flagged": str(report.invalid),\n            "X-Citebound-Invalid": str(report.flagged)', "the flagged and invalid headers swapped"),
    Mutant("held", "citebound/serving/held.py", "    report.removed_sentences += len(drop)\n", "",
           "sentences removed for failed structured citations are not counted"),
    # (first run: "block decides before the structured citations' audits join the report" survived: that per-part
    # decision was redundant, and merged reports inherited a part's blocked flag; both are gone, and the mutant
    # below replaces it)
    Mutant("held", "citebound/serving/held.py", "self.asm.blocked(self.guard, self.prior() if self.prior is not None else ())",
           "self.asm.blocked(self.guard)", "a streamed text run decides block on itself alone, not the answer so far"),
    Mutant("held", "citebound/serving/held.py", "open_end=not final, block=False)\n        except", "open_end=final, block=False)\n        except",
           "a stream's last segment is guarded as open-ended, the others as ended"),
    Mutant("stream", "citebound/guarding/stream.py", "    out.guarantee_card = parts[-1][1].guarantee_card", "    out.guarantee_card = parts[0][1].guarantee_card",
           "a merged report carries the first segment's guarantee card (the monitor's state before the answer)"),
    Mutant("stream", "citebound/guarding/stream.py", "        went_out = self.sent - self.parts[-1][1].n_sentences", "        went_out = self.sent",
           "a blocked stream's reason counts the withheld segment's sentences as sent"),
    Mutant("messages", "citebound/serving/api_messages.py", "            if out and out[-1][-1] == i - 1:", "            if out and out[-1][-1] <= i - 1:",
           "text blocks separated by a tool_use block are guarded as one run"),
    Mutant("messages", "citebound/serving/api_messages.py",
           'sum(1 for b in content if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use"))',
           'sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")',
           "a server_tool_use block is not counted as an unchecked tool call"),
    Mutant("responses", "citebound/serving/api_responses.py", "at = min(max(at, 0), n) if", "at = min(max(at, 0), n - 1) if",
           "an annotation at the text's end attaches one character early"),
    Mutant("responses", "citebound/serving/api_responses.py",
           'i.get("type") in ("reasoning",)})', 'i.get("type") in ()})', "a reasoning item is not reported as an unchecked field"),
    # the upstream client
    Mutant("upstream", "citebound/serving/upstream.py", '(cfg.upstream_auth == "client-else-own" and not sent)',
           '(cfg.upstream_auth == "client-else-own" and sent)', "client-else-own sends the proxy's key when the client sent one"),
    # (first run: "a stream's last event without its blank line is lost" survived; the reader then followed the SSE
    # standard, which drops such an event, so the mutant became its inverse)
    Mutant("upstream", "citebound/serving/upstream.py", "    # an event with no blank line after it when the stream ends is dropped",
           "    if data:\n        yield _event(\"\\n\".join(data))\n    # an event with no blank line after it when the stream ends is dropped",
           "an event the stream cut before its blank line is dispatched"),
    Mutant("upstream", "citebound/serving/upstream.py", "        if n > cap:\n            raise StreamFailure(f\"the upstream's stream is over",
           "        if n > cap + len(chunk):\n            raise StreamFailure(f\"the upstream's stream is over", "a stream may run one read past its byte cap"),
    # the served verifier and its HTTP client
    Mutant("remote", "citebound/verifiers/remote.py", "            score[i] = min(1.0, max(0.0, float(probs[",
           "            score[pos] = min(1.0, max(0.0, float(probs[", "a score goes to the row's position, not its index (answers out of order)"),
    Mutant("remote", "citebound/verifiers/remote.py", "            if len(probs) > 1 and abs(sum(probs) - 1.0) > 1e-3:",
           "            if len(probs) > 2 and abs(sum(probs) - 1.0) > 1e-3:", "two-class probabilities that do not sum to 1 are accepted"),
    Mutant("remote", "citebound/verifiers/remote.py", "                if not e.retryable or attempt == self.max_retries or",
           "                if not e.retryable or attempt > self.max_retries or", "one retry more than max_retries"),
    Mutant("http", "citebound/scoring/bounded_http.py", "        size = int(size_text, 16)", "        size = int(size_text)",
           "chunk sizes read as decimal"),
    Mutant("http", "citebound/scoring/bounded_http.py", "    if status < 200 or status >= 300:", "    if status < 200 or status > 300:",
           "a 300 answer read as a success"),
    # the monitors
    Mutant("monitor", "citebound/calibration/monitor.py", "    if n_unsupported <= 0 or missed <= 0:", "    if n_unsupported <= 0 or missed < 0:",
           "no miss at all gives p = sf(-1) computed, not 1"),
    Mutant("monitor", "citebound/calibration/monitor.py", "    return binom_sf(missed - 1, n_unsupported, alpha)", "    return binom_sf(missed, n_unsupported, alpha)",
           "the label p-value is P(X > k), not P(X >= k): an alarm too early"),
    Mutant("groups", "citebound/calibration/groups.py", 'counts = {"n_unsupported": int((y[mask] == 0).sum()), "n_supported": int((y[mask] == 1).sum())}',
           'counts = {"n_unsupported": int((y == 0).sum()), "n_supported": int((y == 1).sum())}',
           "a fallback group reports the pooled counts, not its own"),
    Mutant("precision", "citebound/calibration/precision.py", "    level = delta / (2 * len(grid))", "    level = delta / len(grid)",
           "the union bound forgets the two bounds per tau"),
    # round 7, second part: the monitors' arithmetic, the card, the labelling panel, MCP (same day, same way)
    Mutant("card", "citebound/guarding/card.py", 'return self.on_void == "flag-all" and self.state in ("void", "unavailable")',
           'return self.on_void == "flag-all" and self.state == "void"',
           "flag-all lets citations pass while the store cannot say whether the monitor is void"),
    Mutant("eprocess", "citebound/calibration/eprocess.py",
           "return PI_GRID * reference_error(n1, delta) + (1 - PI_GRID) * reference_error(n0, delta)",
           "return PI_GRID * reference_error(n0, delta) + (1 - PI_GRID) * reference_error(n1, delta)",
           "the references' error weighted by the other class's count"),
    Mutant("eprocess", "citebound/calibration/eprocess.py", "            self._log += log_bets(self.p_values(float(s), theta), self._eps)",
           "            self._log += log_bets(self.p_values(float(s), theta))",
           "the robust alarm bets without the references' error (false alarms past delta)"),
    Mutant("eprocess", "citebound/calibration/eprocess.py",
           "return PI_GRID[None, :] * p1[:, None] + (1 - PI_GRID[None, :]) * p0[:, None]",
           "return PI_GRID[None, :] * p0[:, None] + (1 - PI_GRID[None, :]) * p1[:, None]",
           "the mixture weighs the classes' p-values by the other class's share"),
    Mutant("eprocess", "citebound/calibration/eprocess.py", "        if missed > n:\n", "        if missed >= n and n:\n",
           "a post where every unsupported citation was missed is refused"),
    Mutant("labelling", "citebound/labelling/store.py", "    need = math.ceil(1 / alpha - 1)", "    need = math.floor(1 / alpha - 1)",
           "the panel says tau is finite one unsupported label early (alpha whose 1/alpha is not whole)"),
    Mutant("mcp", "citebound/serving/mcp_server.py", '"claim": claim if len(claim) <= MAX_CLAIM_SHOWN else',
           '"claim": claim if len(claim) < MAX_CLAIM_SHOWN else', "a claim exactly at the shown length gets an ellipsis"),
    Mutant("config", "citebound/cli/config_file.py", 'value = value.lower() in ("true", "1")', 'value = value.lower() in ("true",)',
           "CITEBOUND_NO_REATTRIBUTE=1 reads as false"),
    Mutant("config", "citebound/cli/config_file.py", '    if kind == "int" and isinstance(value, float) and value != int(value):\n        raise bad\n', "",
           "an integer key given 2.5 is read as 2"),
    Mutant("config", "citebound/cli/config_file.py", "            if key in INLINE_SECRETS:\n", "            if key in INLINE_SECRETS and where != \"environment\":\n",
           "a secret given inline in a CITEBOUND_* variable is accepted"),
    # round 8 (2026-12-04, second session): the API adapters, the chat proxy's stream, the upstream client, the
    # served verifier, the other citation forms, readiness and the LiteLLM guardrail; chosen by reading the code
    # only, before any test was read again
    Mutant("messages", AM, 'elif b.get("type") in ("document", "search_result"):', 'elif b.get("type") == "document":',
           "a search_result block's text is not a passage: its citations are invalid, later documents renumbered"),
    Mutant("messages", AM, "if out and out[-1][-1] == i - 1:", "if out:",
           "text blocks split by a tool_use are joined into one run: a sentence may span the tool call"),
    Mutant("messages", AM, "        pos += len(text)\n    return out", "        pos += len(text.rstrip())\n    return out",
           "a later block's citations attach before its text's end (the earlier blocks' trailing spaces left out)"),
    Mutant("messages", AM, 'calls = sum(1 for b in content if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use"))',
           'calls = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")',
           "an unstreamed message's server_tool_use blocks are not counted as unchecked tool calls"),
    Mutant("messages", AM, 'self.calls += b.get("type") in ("tool_use", "server_tool_use")', 'self.calls += b.get("type") == "tool_use"',
           "a streamed message's server_tool_use blocks are not counted as unchecked tool calls"),
    Mutant("messages", AM, "self.cites.append(Attached(self.block_start + len(text.rstrip()), quoted,",
           "self.cites.append(Attached(len(text.rstrip()), quoted,",
           "a streamed block's citations attach as if the block started the run (its start offset left out)"),
    Mutant("messages", AM, '"stop_reason": "refusal"', '"stop_reason": "end_turn"',
           "a blocked Messages stream ends as a normal turn"),
    Mutant("messages", AM, '"report": report_body(report, self.show or not self.blocked)', '"report": report_body(report, True)',
           "a blocked Messages stream's report carries the withheld claims"),
    Mutant("messages", AM, "            if not stopped:\n", "            if False:\n",
           "a Messages stream cut short before message_stop ends as if complete"),
    Mutant("messages", AM, 'headers = upstream_headers(cfg, request.headers.get("x-api-key"), "x-api-key")',
           'headers = upstream_headers(cfg, request.headers.get("x-api-key"))',
           "the Messages upstream gets the key as Authorization: Bearer, not x-api-key"),
    Mutant("messages", AM, 'for k in ("anthropic-version", "anthropic-beta")', 'for k in ("anthropic-version",)',
           "the client's anthropic-beta header does not reach the upstream"),
    Mutant("responses", AR, """by_file[fid] = f"{by_file[fid]}\\n{r['text']}" if fid in by_file else r["text"]""",
           """by_file[fid] = r["text"]""",
           "a file's later search result replaces its earlier ones: a quote from the first result fails"),
    Mutant("responses", AR, 'at = a.get("end_index", a.get("index"))', 'at = a.get("start_index", a.get("index"))',
           "an annotation attaches at its start, not its end (the sentence before it may be cited)"),
    Mutant("responses", AR, 'if a.get("type") in ("file_citation", "container_file_citation") else None',
           'if a.get("type") == "file_citation" else None',
           "a container_file_citation is never checked against its file's text"),
    Mutant("responses", AR, 'for f in ("index", "start_index", "end_index")', 'for f in ("index", "end_index")',
           "an annotation's start_index does not follow the guarded text"),
    Mutant("responses", AR, """str(i.get("type", "")).endswith("call")
                    and i.get("type") != "file_search_call")""", """str(i.get("type", "")).endswith("call"))""",
           "an unstreamed response's file_search_call (whose results the guard reads) counts as an unchecked tool call"),
    Mutant("responses", AR, "                self.passages += found\n", "",
           "a streamed response's file-search results are not passages: their citations are invalid"),
    Mutant("responses", AR, 'else {"text": "", "annotations": []})', "else {})",
           "an output_text part never streamed reaches the client unchecked in output_item.done"),
    Mutant("responses", AR, 'ev = ev | {"part": ev["part"] | {"text": "", "annotations": []}}', "pass",
           "content_part.added passes the upstream's text through unchecked"),
    Mutant("responses", AR, '"incomplete_details": {"reason": "content_filter"}', '"incomplete_details": {"reason": "max_output_tokens"}',
           "a blocked Responses stream says it ran out of tokens"),
    Mutant("responses", AR, '"report": report_body(report, self.show or self.blocked is None)', '"report": report_body(report, True)',
           "a blocked Responses stream's report carries the withheld claims"),
    Mutant("responses", AR, "            held.sent.append(rest)\n", "",
           "the part's last guarded segment is missing from output_text.done's text"),
    Mutant("responses", AR, 'ev = ev | {"sequence_number": self.seq}', 'ev = {"sequence_number": self.seq} | ev',
           "the upstream's sequence numbers are kept (gaps where held text was merged)"),
    Mutant("chatproxy", SP, 'if len(choices) > 1 or choices[0].get("index", 0) not in (0, None):', "if len(choices) > 1:",
           "a stream whose only choice has index 1 passes as the first choice"),
    Mutant("chatproxy", SP, 'self.tool_calls += sum(1 for c in calls if isinstance(c, dict) and c.get("id"))',
           "self.tool_calls += len(calls)", "every tool-call delta counts as a call, its continuations too"),
    Mutant("chatproxy", SP, "            if not done and finish is None:\n", "            if False:\n",
           "a chat stream cut short (no [DONE], no finish_reason) ends as if complete"),
    Mutant("chatproxy", SP, "finish = fin or finish", "finish = fin",
           "a usage chunk after the finish_reason erases it"),
    Mutant("chatproxy", SP, "withheld = self.held.block_report is not None and not self.return_original",
           "withheld = self.held.block_report is not None and self.return_original",
           "a blocked chat stream's report carries the withheld claims"),
    Mutant("chatproxy", SP, "            await resp.aclose()\n", "            pass\n",
           "the upstream's stream is not closed when the client goes away"),
    Mutant("chatproxy", PX, "base = 1 if extra.citation_base is None else extra.citation_base", "base = 1",
           "--passages-prompt numbers the passages from 1 even for a request in base 0"),
    Mutant("chatproxy", PX, 'if message.get("content") is not None:\n            message["content"] = text',
           'if True:\n            message["content"] = text', "a tool-call answer's null content comes back as an empty string"),
    Mutant("chatproxy", PX, 'if rest.startswith("messages"):', 'if rest == "messages":',
           "a 404 under /v1/messages/... is in OpenAI's shape (the anthropic SDK cannot read it)"),
    Mutant("upstream", UP, '(cfg.upstream_auth == "client-else-own" and not sent)', '(cfg.upstream_auth == "client-else-own" and sent)',
           "client-else-own sends the proxy's key when the client sent its own"),
    Mutant("upstream", UP, "return [k for k in UNCHECKED_FIELDS if message.get(k) not in (None, \"\", [], {})]",
           "return [k for k in UNCHECKED_FIELDS if message.get(k) is not None]",
           "an empty refusal (an empty string) is reported as an unchecked field"),
    Mutant("upstream", UP, '(1 if isinstance(message.get("function_call"), dict) else 0)', "0",
           "a legacy function_call is not counted as a tool call"),
    Mutant("held", H, "if (extra is None or extra.passages is None) and not more:", "if extra is None or extra.passages is None:",
           "a Messages request whose passages are its document blocks is refused (400)"),
    Mutant("held", H, "base=self.base, group=self.group, open_end=not final)", "base=self.base, group=self.group, open_end=final)",
           "a segment past the timeout is marked unverified as if the answer ended (or went on)"),
    Mutant("held", H, "and structured.failed(a, fail_open) and p.sentence[i][0] >= 0})",
           "and structured.failed(a, fail_open) and p.sentence[i][0] > 0})",
           "remove keeps the first sentence when its citation as data failed"),
    Mutant("remote", RV, 'if "@" in url.split("/")[2]:', 'if "@" in url.split("/")[-1]:',
           "a url with user:password@ is accepted (credentials in a config)"),
    Mutant("remote", RV, "(self.num_classes is None or self.positive >= self.num_classes)",
           "(self.num_classes is None or self.positive > self.num_classes)",
           "positive_class equal to num_classes (one past the last class) is accepted"),
    Mutant("remote", RV, "first, second = (claims, windows) if self.claim_first else (windows, claims)",
           "first, second = (windows, claims) if self.claim_first else (claims, windows)",
           "pair_order reversed: the score route gets (claim, passage) by default"),
    Mutant("remote", RV, "if len(probs) > 1 and abs(sum(probs) - 1.0) > 1e-3:", "if len(probs) > 2 and abs(sum(probs) - 1.0) > 1e-3:",
           "two class scores that do not sum to 1 (logits, not probabilities) are read"),
    Mutant("remote", RV, "verdict = score >= self.threshold if", "verdict = score > self.threshold if",
           "a score exactly at the threshold is not a support verdict"),
    Mutant("remote", RV, "end = min(end, time.monotonic() + self.timeout)", "end = time.monotonic() + self.timeout",
           "a call runs past the request's own deadline (only timeout_seconds bounds it)"),
    Mutant("remote", RV, "due = self._suspect or time.monotonic() - self._checked_at >= self.identity_every",
           "due = time.monotonic() - self._checked_at >= self.identity_every",
           "after a failure the served model's identity is not checked again before the next interval"),
    Mutant("forms", "citebound/text/forms.py", r're.search(r"(?:\d|(?<![^\W\d_])[^\W\d_]{1,2})$", before)',
           r're.search(r"(?:\d|(?<![^\W\d_])[^\W\d_]{1,3})$", before)',
           "<sup>2</sup> after a three-letter word (cells<sup>2</sup>) is taken for an exponent: never checked"),
    Mutant("forms", "citebound/text/forms.py", "            if sents[k].end > lo:", "            if sents[k].end >= lo:",
           "a form at the next sentence's first character also touches the sentence before"),
    Mutant("forms", "citebound/text/forms.py", "k = max(bisect.bisect_right(starts, lo) - 1, 0)", "k = max(bisect.bisect_left(starts, lo), 0)",
           "a form inside a sentence (not at its start) is checked against the next sentence"),
    Mutant("readiness", "citebound/serving/app.py", '(store_down and scope == "all")', "store_down",
           "/readyz?scope=verdicts says 503 while the store is down (the load balancer stops sending verdicts)"),
    Mutant("litellm", LG, "if len(choices) != 1:", "if len(choices) > 2:",
           "the guardrail passes an answer with two choices, the second unchecked"),
    Mutant("litellm", LG, '        a["claim"] = None\n', "        pass\n",
           "a blocked answer's 403 carries the withheld claims"),
    Mutant("litellm", LG, "            message.content = text\n", "            message.content = content\n",
           "the guardrail reports but sends the unguarded text"),
    Mutant("litellm", LG, '        kw["block_above"] = float(kw["block_above"])\n', "        pass\n",
           "citebound_block_above given as a string in the config is not read as a number"),
    Mutant("litellm", LG, "if len(choices) > 1:", "if len(choices) > 2:",
           "the guardrail's stream passes a second choice unchecked"),
    Mutant("litellm", LG, "group=group, open_end=not final, block=False)", "group=group, open_end=final, block=False)",
           "a streamed segment is guarded as if the answer ended (or went on)"),
    Mutant("litellm", LG, 'delta.content = (delta.content or "") + out + tail', "delta.content = out + tail",
           "the text guarded from the last chunk's own content is dropped"),
    Mutant("litellm", LG, "    extra = data.get(\"citebound\") or (data.get(\"metadata\") or {}).get(\"citebound\") or {}",
           "    extra = data.get(\"citebound\") or {}", "passages sent in metadata.citebound are not read (400)"),
    # round 8, second batch (written an hour later the same way: the request body's limit, the request's work and
    # its statuses, serve's options, the guard route's batch)
    Mutant("service2", APP, "if declared.isdigit() and int(declared) > self.limit:", "if declared.isdigit() and int(declared) >= self.limit:",
           "a body that declares exactly max_request_bytes is refused"),
    Mutant("service2", APP, "            if n > self.limit:\n", "            if n >= self.limit:\n",
           "a chunked body of exactly max_request_bytes is refused"),
    Mutant("service2", APP, 'if path in ("/v1/chat/completions", "/v1/responses"):', 'if path == "/v1/chat/completions":',
           "a 413 or 422 on /v1/responses is not in OpenAI's error shape (the SDK cannot read it)"),
    Mutant("service2", APP, 'if whole.lstrip()[:1] in (b"{", b"["):', 'if whole[:1] in (b"{", b"["):',
           "a JSON body that starts with whitespace skips the NaN and depth check"),
    Mutant("service2", SV, "            token.cancel()  # done or not, nothing of this request runs on\n", "",
           "a request that timed out or was answered leaves its work running in the batcher"),
    Mutant("service2", SV, "timeout=min(left, CLIENT_POLL_S) if gone else left)", "timeout=left)",
           "a client that disconnects is noticed only at the request timeout"),
    Mutant("service2", SV, 'the client disconnected; its work was cancelled"}, status_code=499)',
           'the client disconnected; its work was cancelled"}, status_code=504)',
           "a client that left is logged and counted as a timeout (504), not 499"),
    Mutant("service2", SV, "    if not show_text:\n        body = without_claims(body)\n", "",
           "a blocked chat answer's 403 carries the claims the caller never saw"),
    Mutant("service2", GR, "if len(ins) > limits.max_answers_per_request:", "if len(ins) >= limits.max_answers_per_request:",
           "a batch of exactly max_answers_per_request is refused"),
    Mutant("service2", GR, 'totals["answers"], totals["failed_answers"] = float(len(done)), float(len(out) - len(done))',
           'totals["answers"], totals["failed_answers"] = float(len(out)), float(len(out) - len(done))',
           "a batch's answer count includes the answers that failed"),
    Mutant("service2", GR, "failed = [(str(o.id if o.id is not None else o.index + 1), o.error)",
           "failed = [(str(o.id or o.index + 1), o.error)", "a failed answer with id 0 is shown on the audit page by its position"),
    Mutant("service2", GR, "guarded_answer=None if res[1].blocked else res[0]", "guarded_answer=res[0]",
           "a blocked answer in a batch comes back with its text"),
    Mutant("serve_cli", CS, 'if args.workers > 1 and (args.state is None or args.state == "memory://"):',
           "if args.workers > 1 and args.state is None:", "--workers 2 with --state memory:// is accepted (two monitors)"),
    Mutant("serve_cli", CS, "if not 0 < args.port < 65536:", "if not 0 < args.port <= 65536:", "--port 65536 is accepted"),
    Mutant("serve_cli", CS, "args.max_wait_ms < 0 or args.drain_grace < 0", "args.max_wait_ms <= 0 or args.drain_grace < 0",
           "--max-wait-ms 0 (no wait: each request scored at once) is refused"),
    # round 8, third batch (written while CI ran, the same way: the monitor routes and the metrics they export)
    Mutant("monitor2", MR, "    groups |= {g: cal.pooled.card(g, cal.resolve(g)[1]) for g in cal.fallback}\n", "",
           "/v1/monitor leaves out the groups that fall back to the pooled calibration"),
    Mutant("monitor2", MR, "            return keeper.card(None if fallback else group)", "            return keeper.card(group)",
           "labels posted for a fallback group answer with a card that claims the group's own calibration"),
    Mutant("monitor2", MR, "    if len(raw) > 64 * 1024:", "    if len(raw) >= 64 * 1024:",
           "an admin body of exactly 65536 bytes is refused"),
    Mutant("monitor2", MR, 'if scheme.lower() != "bearer"', 'if scheme != "Bearer"',
           "an admin token sent as 'bearer <token>' (lower case, as HTTP allows) is refused"),
    Mutant("monitor2", MR, 'status_code=503,\n                                headers={"Retry-After": "5"})', "status_code=503)",
           "a store that cannot take labels answers 503 without Retry-After"),
    Mutant("monitor2", MET, "            self.uncited.inc(r.uncited)", "            self.uncited.inc(1 if r.uncited else 0)",
           "the uncited-sentences counter counts answers with any, not sentences"),
    Mutant("monitor2", MET, 'live = keeper.monitor is not None and now != "unavailable"', "live = keeper.monitor is not None",
           "the martingale gauge claims a value while the store cannot say"),
    Mutant("monitor2", MET, 'for st in (*STATES, "off", "unavailable"):', "for st in STATES:",
           "the monitor-state gauge never shows off or unavailable"),
    Mutant("monitor2", MET, '{"pooled": guard.keeper, **guard.calibrations.groups}.items()', '{"pooled": guard.keeper}.items()',
           "the monitor gauges leave out every group"),
    # ---- round 9 (2026-12-04, third session, #56): the lines the fast tier never ran (coverage), written after
    # their tests, to show each new test fails when its target is broken
    Mutant("visible9", V9, "            return (attrs, end.end()) if end.end() - lt <= MAX_TAG else None",
           "            return attrs, end.end()", "a tag longer than MAX_TAG is still read when its last attribute ends late"),
    Mutant("visible9", V9, "    while pos < limit:", "    while pos <= limit:", "one more attribute is read at MAX_TAG itself"),
    Mutant("visible9", CSS9, '        obscured = True\n    if tag in HIDDEN_TAGS', '        hidden = True\n    if tag in HIDDEN_TAGS',
           'hidden="until-found" text is left out of an answer (a reader can find and open it)'),
    Mutant("visible9", CSS9, '        obscured = True\n    if tag == "details"', '        pass\n    if tag == "details"',
           "a visibility value the guard does not know is taken as visible"),
    Mutant("visible9", CSS9, 'obscured |= float(value.rstrip("%")) / (100 if value.endswith("%") else 1) < 0.1',
           'obscured |= float(value.rstrip("%")) < 0.1', "opacity in percent is read as a fraction (9% is 9)"),
    Mutant("visible9", CSS9, 'elif name == "zoom" and value == "0":\n                obscured = True',
           'elif name == "zoom" and value == "0":\n                pass', "zoom:0 leaves the text readable"),
    Mutant("visible9", CSS9, '            if c is None and value not in ("inherit", "initial", "unset", "currentcolor"):\n'
           '                obscured = True', '            if c is None and value not in ("inherit", "initial", "unset", "currentcolor"):\n'
           '                pass', "a colour the guard cannot read is taken as readable"),
    Mutant("visible9", CSS9, 'elif value not in ("none", "transparent", "initial", "unset", "inherit", "") and c is None:',
           'elif value not in ("none", "transparent", "initial", "unset", "inherit", "") and c is not None:',
           "a gradient or image backdrop is taken as readable"),
    Mutant("visible9", CSS9, "if c is not None and c[3] >= 0.99:", "if c is not None and c[3] > 0:",
           "a half-transparent backdrop is taken as opaque"),
    Mutant("visible9", V9, 'state = "data"  # <!--> and <!---> leave the escape at once',
           'pass  # <!--> and <!---> leave the escape at once', "<!--> in a script does not leave the escape"),
    Mutant("visible9", V9, 'return  # "any other end tag" stops at a special element',
           'pass  # "any other end tag" stops at a special element', "an end tag closes through a special element"),
    Mutant("visible9", V9, "            if name in _SPECIAL and tag in _FORMATTING:\n                self.broken = True",
           "            if name in _SPECIAL and tag in _FORMATTING:\n                self.broken = False",
           "a formatting end tag over a special element leaves the tree as it was"),
    Mutant("visible9", V9, "self.vis._add(HIDDEN if inner.hidden or inner.invisible else UNCERTAIN, tag_end, hi)",
           "self.vis._add(UNCERTAIN, tag_end, hi)", "a hidden textarea's text is checked as if shown"),
    Mutant("visible9", V9, "return None  # a quoted value that does not close within reach",
           "pass  # a quoted value that does not close within reach", "a quote that never closes is read as a plain value"),
    # the proxy's failures
    Mutant("paths9", H9, 'raise GuardFailure(422, str(e), "unknown_group") from None',
           'raise GuardFailure(400, str(e), "unknown_group") from None', "an unknown group is a 400, not a 422"),
    Mutant("paths9", H9, "        if listed and not isinstance(data.get(listed), list):", "        if False:",
           "an upstream answer without its list is taken"),
    Mutant("paths9", H9, '        return StreamFailure(str(e), "limit")', '        return StreamFailure(str(e), "bad_input")',
           "a stream's limit is reported as bad input"),
    Mutant("paths9", H9, "        return StreamFailure(str(e), e.code)", "        return StreamFailure(str(e))",
           "the guard's own failure in a stream is blamed on the upstream"),
    Mutant("paths9", SP9, "                content, fin, calls = _delta(ev)  # first: it refuses an event that is not a JSON object, by name\n"
           "                self.meta.take(ev)\n", "                self.meta.take(ev)\n                content, fin, calls = _delta(ev)\n",
           "an event that is not an object fails as an AttributeError"),
    Mutant("paths9", UP9, "                if n > 4096:\n                    break\n", "",
           "a refused stream's whole body is read"),
    Mutant("paths9", UP9, '            raise StreamFailure("the upstream\'s stream is not valid UTF-8") from None',
           '            text = chunk.decode("utf-8", "replace")', "bad UTF-8 in a stream is replaced, not refused"),
    # the served verifier and its HTTP client
    Mutant("remote9", RV, "if not isinstance(answer, dict) or not isinstance(answer.get(\"data\"), list):",
           "if not isinstance(answer, dict):", "an answer without a data list is read anyway"),
    Mutant("remote9", RV, "        if answer.get(\"model\") not in (None, self.model):", "        if False:",
           "an answer from another model is taken"),
    Mutant("remote9", RV, "or not 0 <= i < n or i in seen:", "or not 0 <= i <= n or i in seen:",
           "an index one past the last is taken"),
    Mutant("remote9", RV, "or not 0 <= i < n or i in seen:", "or not 0 <= i < n:", "an index given twice is taken"),
    Mutant("remote9", RV, "and -1e-6 <= p <= 1 + 1e-6 for p in probs", "and -1e-6 <= p for p in probs",
           "a score above 1 is taken as a probability"),
    Mutant("remote9", RV, "                self._suspect = True\n            return str(e)", "                self._suspect = True\n            return \"\"",
           "a model list that fails at a recheck lets the calls go on"),
    Mutant("http9", BH, "                if length > max_bytes:", "                if length >= max_bytes:",
           "an answer of exactly max_bytes is refused"),
    Mutant("http9", BH, "        if got > max_bytes + (64 * 1024 if chunked else 0):", "        if got > max_bytes + 64 * 1024:",
           "a body read to the close may pass max_bytes by 64 KiB"),
    Mutant("http9", BH, "            if chunked or length is not None:\n", "            if chunked:\n",
           "a body cut short of its Content-Length is taken"),
    Mutant("http9", BH, "                if len(buf) > MAX_HEADER_BYTES or not chunk:", "                if not chunk:",
           "headers are read without a size limit"),
    Mutant("http9", BH, 'chunked = "chunked" in headers.get("transfer-encoding", "").lower()',
           'chunked = "chunked" in headers.get("transfer-encoding", "")', "Transfer-Encoding: Chunked is not read as chunks"),
    Mutant("http9", BH, "retryable=status in RETRY_STATUSES", "retryable=status >= 500", "a 500 is retried"),
    # the library and the CLI
    Mutant("guard9", G, "                todo.append((answer, normalise_passages(listed), b))",
           "                todo.append((answer, normalise_passages(list(passages)), b))",
           "a string of passages is split into one-character passages"),
    Mutant("guard9", "citebound/guarding/core.py", "                if units > plan.max_units:", "                if units >= plan.max_units:",
           "re-attribution stops one unit before its budget"),
    Mutant("guard9", "citebound/cli/guard.py", 'a.reason.startswith(("the verifier failed", "the verifier gave no score"))',
           'a.reason.startswith("the verifier failed")', "a served verifier's failures leave the command's status 0"),
    Mutant("guard9", A, "(text[cut + 1:] if 0 <= cut < 40 else text)", "(text[cut + 1:] if 0 <= cut <= 40 else text)",
           "evidence loses a first word of 40 characters"),
    Mutant("guard9", A, "text = (text[:cut] if cut > len(text) - 40 else text)", "text = (text[:cut + 1] if cut > len(text) - 40 else text)",
           "evidence cut at its end keeps the space before the ellipsis"),
    Mutant("guard9", C, "if bounded and any(len(x) > 18 for x in rng):", "if bounded and any(len(x) > 19 for x in rng):",
           "a citation number of 19 digits is parsed"),
    Mutant("guard9", "citebound/text/forms.py", "            continue  # inside a hidden element\n", "",
           "a <sup> form inside hidden markup fails its sentence"),
    Mutant("guard9", "citebound/serving/mcp_server.py", "    if len(claim) > MAX_CLAIM_CHARS:", "    if len(claim) >= MAX_CLAIM_CHARS:",
           "an MCP claim of exactly the limit is refused"),
    Mutant("guard9", "citebound/serving/mcp_server.py", "claim if len(claim) <= MAX_CLAIM_SHOWN else",
           "claim if len(claim) < MAX_CLAIM_SHOWN else", "a compact claim of exactly 200 characters is cut"),
    # calibration
    Mutant("calib9", "citebound/calibration/monitor.py",
           'self.log_m, self._log_parts = float(st["mixture"][0]), np.array(st["mixture"][1], float)',
           'self.log_m, self._log_parts = float(st["mixture"][0]), np.zeros(len(EPS_GRID))',
           "a loaded mixture martingale keeps its value but loses its parts"),
    Mutant("calib9", "citebound/calibration/eprocess.py", "        if n > self.MAX_POST:", "        if n >= self.MAX_POST:",
           "a post of exactly MAX_POST labels is refused"),
    Mutant("calib9", "citebound/calibration/eprocess.py", "        if not self._s0 or not self._s1:",
           "        if not self._s0 and not self._s1:", "the robust alarm starts with one class's scores only"),
    Mutant("calib9", "citebound/cli/monitor.py", '            passed = float(rec["score"]) > tau', '            passed = float(rec["score"]) >= tau',
           "a label's score exactly at tau counts as passed"),
    Mutant("calib9", "citebound/cli/monitor.py", "    tau = in_force(keeper.cal)[1]", '    tau = keeper.cal.get("tau")',
           "labels are read against the conformal tau, not the PAC tau in force"),
    # the CLI's options and inputs, the batcher, the labelling session
    Mutant("cli9", "citebound/cli/config_file.py", "        if isinstance(value, str):\n            value = [value]\n", "",
           "a config list given as one string is refused"),
    Mutant("cli9", "citebound/cli/config_file.py", 'if kind == "int" and isinstance(value, float) and value != int(value):',
           'if kind == "int" and isinstance(value, float):', "a whole float for an integer key is refused"),
    Mutant("cli9", CS, '    if "{passages}" not in args.passages_prompt:', '    if "{passage" not in args.passages_prompt:',
           "a passages prompt with {passage} is taken"),
    Mutant("cli9", "citebound/cli/label.py", "    if args.sample is not None and args.sample < 1:",
           "    if args.sample is not None and args.sample < 0:", "label --sample 0 is taken"),
    Mutant("cli9", "citebound/cli/inputs.py", "    if size > cap:", "    if size >= cap:", "an input of exactly the cap is refused"),
    Mutant("cli9", "citebound/labelling/store.py", "        if len(note) > MAX_NOTE_CHARS:", "        if len(note) >= MAX_NOTE_CHARS:",
           "a note of exactly the limit is refused"),
    Mutant("batcher9", "citebound/serving/batcher.py", "                    self.queue.put(None)\n                    break\n",
           "                    break\n", "close() while a batch gathers leaves the worker waiting"),
    Mutant("batcher9", "citebound/serving/batcher.py", "        if max_units < 1 or max_wait_ms < 0:",
           "        if max_units < 1 or max_wait_ms <= 0:", "a batcher with no wait is refused"),
    Mutant("apis9", AR, "        if self.guard.blocks(self.report()):\n            self.blocked = self.report()\n            return\n", "",
           "a Responses part whose citations as data fail does not block the stream at its end"),
    # round 10 (2026-12-04, fourth session): the code no earlier round mutated (the binomial tails, the trained
    # head's features, the graph encoder, the lexical and embedding verifiers, the LLM judge, the local chat
    # endpoint, the study's re-attribution and conformal tables, the file readers), chosen from the code alone
    # before any test was read
    Mutant("binomial10", BI, "    a = k + 1\n", "    a = k\n",
           "the windowed upper tail (n > 100000) includes k itself"),
    Mutant("binomial10", BI, "np.arange(k + 1, n + 1, dtype=float)", "np.arange(k + 1, n, dtype=float)",
           "the exact upper tail drops its last term (j = n)"),
    Mutant("binomial10", BI, "[np.clip(idx - lo, 0, hi - lo)]", "[np.clip(idx - lo - 1, 0, hi - lo)]",
           "the windowed cdf reads the cumulative sum one term short"),
    Mutant("binomial10", BI, "np.cumsum(np.log(n - i) - np.log(i + 1) + ratio)",
           "np.cumsum(np.log(n - i + 1) - np.log(i + 1) + ratio)", "the neighbour ratio of the windowed pmf is off by one"),
    Mutant("binomial10", BI, "        return NormalDist().inv_cdf(1.0 - q)", "        return NormalDist().inv_cdf(q)",
           "normal_isf without scipy returns -z"),
    Mutant("binomial10", BI, "        out = np.where(ks >= 0, 1.0, 0.0)", "        out = np.where(ks > 0, 1.0, 0.0)",
           "P(X <= 0) is 0 when p = 0"),
    Mutant("binomial10", BI, "        if binom_cdf(k, n, mid) > level:", "        if binom_sf(k, n, mid) > level:",
           "the Clopper-Pearson bisection uses the upper tail"),
    # the trained head's features and the head
    Mutant("trained10", TR, "    return len(c & w) / len(c)\n", "    return len(c & w) / max(len(w), 1)\n",
           "the number share divides by the window's numbers"),
    Mutant("trained10", TR, '    w = {n.replace(",", ".") for n in _NUM.findall(window)}',
           "    w = set(_NUM.findall(window))", "a window's decimal comma is not read as a point"),
    Mutant("trained10", TR, '((x - np.asarray(model["mean"])) / np.asarray(model["scale"]))',
           '((x - np.asarray(model["scale"])) / np.asarray(model["mean"]))', "apply_head swaps mean and scale"),
    Mutant("trained10", TR, "float((tc @ tw.T).max(1).mean())", "float((tc @ tw.T).max(0).mean())",
           "maxsim averages over the window's tokens, not the claim's"),
    Mutant("trained10", TR, "                out[s + j] = [", "                out[j] = [",
           "unit features past the first chunk overwrite the first chunk's rows"),
    Mutant("trained10", TR, "        return s, s >= self.threshold\n", "        return s, s > self.threshold\n",
           "the trained verifier's verdict at exactly the threshold is unsupported"),
    Mutant("trained10", TR, "batch_size=self.batch_size, device=self.device)[:, 1]",
           "batch_size=self.batch_size, device=self.device)[:, 0]", "a fine-tuned cross-encoder reads the wrong class"),
    Mutant("trained10", TR, '        self.threshold = float(self.net.get("threshold", 0.5))',
           '        self.threshold = float(cfg.get("threshold", 0.5))',
           "a fine-tuned network's verdict cut is the config's, not the one it was trained with"),
    Mutant("trained10", HD, "        if c > best[i]:", "        if c >= best[i]:",
           "best_window takes the last of tied windows, not the first"),
    Mutant("trained10", HD, "    sd = np.where(sd > 0, sd, 1.0)", "    sd = np.where(sd >= 0, sd, 1.0)",
           "a constant feature's scale is 0 (division by zero)"),
    Mutant("trained10", HD, '"n_train_supported": int(y.sum())', '"n_train_supported": int((1 - y).sum())',
           "the head records the unsupported count as supported"),
    Mutant("trained10", HD, "make_windows(p, window_chars, stride)", "make_windows(p, stride, window_chars)",
           "a training pair's windows swap width and stride"),
    Mutant("trained10", HD, "                cs.append(c[:claim_cap])", "                cs.append(c)",
           "a training claim is not capped at 600 characters"),
    # the graph encoder
    Mutant("graph10", GP, "                ids[r, :n], mask[r, :n] = encs[i].ids, 1",
           "                ids[r, :n], mask[r, :] = encs[i].ids, 1", "padding tokens are attended in a batch of unequal lengths"),
    Mutant("graph10", TR, "                yield idx, mean_pool(h, mask), unit_rows(h[:, -1]), (mask == 1) & ~np.isin(ids, self.special)",
           "                yield idx, mean_pool(h, mask), unit_rows(h[:, -1]), (mask == 1)",
           "the trained head's token alignment keeps [CLS] and [SEP]"),
    Mutant("graph10", EM, "                yield idx, np_pool(hidden[:, -1], mask)", "                yield idx, np_pool(hidden[:, 0], mask)",
           "the embedding verifier scores layer 2, not layer 6"),
    Mutant("graph10", EM, "            self._memo.update(zip((todo[i] for i in idx), emb))", "            self._memo.update(zip(todo, emb))",
           "embeddings of a length-sorted batch are stored under the unsorted texts"),
    Mutant("graph10", EM, "        s = np.clip((np.sum(c * w, axis=1) + 1.0) / 2.0, 0.0, 1.0)",
           "        s = np.clip(np.sum(c * w, axis=1), 0.0, 1.0)", "the embedding score is the cosine, not (cos + 1) / 2"),
    # the lexical verifier
    Mutant("lexical10", LX, "        if len(tok) > len(suf) + 3 and tok.endswith(suf):", "        if len(tok) >= len(suf) + 3 and tok.endswith(suf):",
           "a stem may be three letters"),
    Mutant("lexical10", LX, "    return len(c & content_terms(window)) / len(c)", "    return len(c & content_terms(window)) / len(c | content_terms(window))",
           "term recall divides by the union"),
    Mutant("lexical10", LX, "if t not in STOPWORDS and len(t) > 1)", "if t not in STOPWORDS and len(t) > 2)",
           "two-character terms (p53's 'p5'? no: 'ms', 'ct', 'uv') are dropped"),
    Mutant("lexical10", LX, "    return len(x & y) / len(x | y) if x | y else 0.0", "    return len(x & y) / len(x) if x else 0.0",
           "token Jaccard divides by the first text's terms"),
    # the LLM judge
    Mutant("judge10", LJ, "    if said_positive == said_negative:\n        return None", "    if said_positive and said_negative:\n        return None",
           "a reply with neither verdict is read as unsupported, not unparsed"),
    Mutant("judge10", LJ, "(?:[\\w'-]+[\\s,;:]+){{0,2}}?{p}", "(?:[\\w'-]+[\\s,;:]+){{0,1}}?{p}",
           "'not at all supported' reads as supported"),
    Mutant("judge10", LJ, "        scores = np.array([np.nan if v is None else float(v) for v in verdicts])",
           "        scores = np.array([0.0 if v is None else float(v) for v in verdicts])",
           "an unparsed reply scores 0 (unsupported) instead of no score"),
    Mutant("judge10", LJ, "        self.n_unparsed += sum(", "        self.n_unparsed = sum(",
           "the unparsed count is the last call's, not the run's"),
    Mutant("judge10", LJ, "    for attempt in range(max_retries + 1):", "    for attempt in range(max_retries):",
           "one attempt fewer than max_retries + 1"),
    Mutant("judge10", LJ, "        end = None if not ends or None in ends else max(ends)", "        end = None if not ends or None in ends else min(ends)",
           "a merged batch's LLM calls get its earliest deadline"),
    Mutant("judge10", LJ, '        return hashlib.sha256(f"{model}\\x1f{prompt}".encode()).hexdigest()',
           '        return hashlib.sha256(prompt.encode()).hexdigest()', "another model's frozen answer is replayed"),
    Mutant("judge10", LJ, "self.template.format(claim=c, passage=w)", "self.template.format(claim=w, passage=c)",
           "the judge's prompt swaps claim and passage"),
    # the local chat endpoint
    Mutant("chatep10", CE, "        while len(batch) < self.max_batch:", "        while len(batch) <= self.max_batch:",
           "a batch takes one request more than max_batch"),
    Mutant("chatep10", CE, "            for (_, fut), out in zip(batch, outs):", "            for (_, fut), out in zip(batch, reversed(outs)):",
           "a batch's answers go to each other's requests"),
    Mutant("chatep10", CE, "                if len(batch) == 1:\n                    batch[0][1].set_exception(e)",
           "                if True:\n                    for _, f in batch:\n                        f.set_exception(e)",
           "a failing batch fails every request, not only the bad one"),
    Mutant("chatep10", CE, '"total_tokens": out.prompt_tokens + out.completion_tokens}', '"total_tokens": out.completion_tokens}',
           "total_tokens leaves out the prompt"),
    Mutant("chatep10", CE, 'for piece in re.findall(r"\\S+\\s*|\\s+", out.text):', 'for piece in re.findall(r"\\S+\\s*", out.text):',
           "a streamed answer loses its leading whitespace"),
    # the study's re-attribution and conformal tables
    Mutant("analysis10", RA, "        order = np.lexsort((tie, -s))", "        order = np.lexsort((-s, tie))",
           "rank_hits orders by the tie-breaker, not the score"),
    Mutant("analysis10", RA, 'f"hit@{k}": bool(gold[:k].any())', 'f"hit@{k}": bool(gold[:k + 1].any())',
           "hit@k looks at k + 1 candidates"),
    Mutant("analysis10", RA, "1.0 if n - g < k else", "1.0 if n - g <= k else",
           "random recall is 1 when exactly k candidates are not gold"),
    Mutant("analysis10", RA, "int(np.sum(~hx & hy))", "int(np.sum(hx & hy))", "McNemar's b_only counts the concordant hits"),
    Mutant("analysis10", RA, '    df = df[df.groupby("sentence_id")["label"].transform("max") == 1]  # sentences with a gold candidate\n', "",
           "sentences with no gold candidate count as misses"),
    Mutant("analysis10", CV, '0.05),\n                "share_splits_below_target": float(np.mean(c < t)),',
           '0.05),\n                "share_splits_below_target": float(np.mean(c <= t)),',
           "a split whose coverage is exactly the target counts as below it"),
    Mutant("analysis10", CV, '"pooled_flag_rate": float(np.mean(~(s > tau)))', '"pooled_flag_rate": float(np.mean(s < tau))',
           "the budget curve does not flag a score equal to tau"),
    Mutant("analysis10", CV, "cov_mond.setdefault(g, []).append(np.mean(test <= guard.group_tau[g]))",
           "cov_mond.setdefault(g, []).append(np.mean(test < guard.group_tau[g]))", "Mondrian coverage misses a score equal to its tau"),
    Mutant("analysis10", CV, "    return s[ok & (df[\"label\"] == 0).to_numpy()], s[ok & (df[\"label\"] == 1).to_numpy()]",
           "    return s[(df[\"label\"] == 0).to_numpy()], s[(df[\"label\"] == 1).to_numpy()]", "NaN scores reach calibration"),
    Mutant("analysis10", CV, "            if n_g < min_group:", "            if n_g <= min_group:", "a group of exactly min_group is left out"),
    # the file readers
    Mutant("io10", IO, '        line = data_bytes[:e.start].count(b"\\n") + 1', '        line = data_bytes[:e.start].count(b"\\n")',
           "a non-UTF-8 byte is reported a line early"),
    Mutant("io10", IO, "    for lineno, line in enumerate(text.splitlines(), 1):", "    for lineno, line in enumerate(text.splitlines()):",
           "a JSONL error names the line before"),
    Mutant("io10", IO, "    loads = strict_json if strict else json.loads", "    loads = json.loads",
           "a user's file with NaN is read"),
    Mutant("io10", IO, "    if len(recs) != 1 or not isinstance(recs[0], dict):", "    if not recs or not isinstance(recs[0], dict):",
           "a file of several objects is read as its first"),
    # round 11 (2026-12-04, fourth session): agreement statistics, group calibration, calibration files, the
    # scorer's cache key, the service's request models, the CLI's shared options; chosen from the code alone
    # before any test was read
    Mutant("stats11", ST, "    den = 2 * d + b + c\n", "    den = 2 * d + b\n",
           "negative specific agreement leaves one discordant cell out of its denominator"),
    Mutant("stats11", ST, "    return float(2 * a / den) if den else math.nan", "    return float(a / den) if den else math.nan",
           "positive specific agreement counts the concordant cell once"),
    Mutant("stats11", ST, "        pi = ((a + b) / n + (a + c) / n) / 2", "        pi = ((a + b) / n + (c + d) / n) / 2",
           "AC1's mean marginal uses the second rater's 'unsupported'"),
    Mutant("stats11", ST, "        pe = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2", "        pe = ((a + b) * (a + c) + (c + d) * (c + d)) / n**2",
           "kappa's chance agreement squares one rater's 'unsupported' marginal"),
    Mutant("stats11", ST, "np.quantile(s, 1 - alpha / 2))", "np.quantile(s, 1 - alpha))",
           "the percentile interval's upper end is at 1 - alpha"),
    Mutant("stats11", ST, "        return ((r * y).sum(1) - n1 * (n1 + 1) / 2) / (n1 * n0)",
           "        return ((r * y).sum(1) - n1 * (n1 - 1) / 2) / (n1 * n0)", "the AUC's rank sum subtracts n1 (n1 - 1) / 2"),
    Mutant("stats11", ST, "    return (int(np.sum(x & y)), int(np.sum(x & ~y)), int(np.sum(~x & y)), int(np.sum(~x & ~y)))",
           "    return (int(np.sum(x & y)), int(np.sum(~x & y)), int(np.sum(x & ~y)), int(np.sum(~x & ~y)))",
           "the 2x2 table swaps b and c"),
    Mutant("stats11", ST, "    return np.where(den > 0, num / np.maximum(den, 1e-300), np.nan)",
           "    return np.where(den >= 0, num / np.maximum(den, 1e-300), np.nan)", "a ratio over nothing is 0, not NaN"),
    # group calibration
    Mutant("groups11", GC, 'if "two_sided" not in entry and (entry.get("pac") or {}).get("tau") is None:',
           'if "two_sided" not in entry and entry.get("tau") is None:',
           "a group with a conformal tau but no PAC tau keeps its own calibration"),
    Mutant("groups11", GC, 'counts = {"n_unsupported": int((y[mask] == 0).sum()), "n_supported": int((y[mask] == 1).sum())}',
           'counts = {"n_unsupported": int((y[mask] == 1).sum()), "n_supported": int((y[mask] == 0).sum())}',
           "a fallback group's counts are swapped"),
    Mutant("groups11", GC, "or len(name) > 200:", "or len(name) >= 200:", "a group name of exactly 200 characters is refused"),
    # calibration files
    Mutant("files11", CFI, '"tau": float(neg[kp - 1]) if kp <= len(neg) else None,', '"tau": float(neg[kp]) if kp < len(neg) else None,',
           "the PAC tau is the rank after the PAC rank"),
    Mutant("files11", CFI, "    flags = ~(scores > guard.tau)\n", "    flags = scores < guard.tau\n",
           "the expected flag rate leaves out scores equal to tau"),
    Mutant("files11", CFI, '"flag_rate_supported": float(np.mean(scores[labels == 1] <= guard.tau))',
           '"flag_rate_supported": float(np.mean(scores[labels == 1] < guard.tau))', "the supported flag rate misses ties at tau"),
    Mutant("files11", CFI, 'isinstance(cal["alpha"], (int, float)) and 0 < cal["alpha"] < 1)',
           'isinstance(cal["alpha"], (int, float)) and 0 <= cal["alpha"] < 1)', "a calibration with alpha 0 is read"),
    Mutant("files11", CFI, '    if cal["verifier_hash"] == verifier_hash:\n        return\n',
           '    if cal["verifier"] == verifier_name:\n        return\n',
           "a calibration is accepted by the verifier's name, whatever its settings"),
    Mutant("files11", CFI, '"monitor_scores_unsupported": [round(float(x), 6) for x in np.sort(scores[labels == 0])],',
           '"monitor_scores_unsupported": [round(float(x), 6) for x in np.sort(scores[labels == 1])],',
           "the robust alarm's unsupported reference holds the supported scores"),
    # the scorer's cache key
    Mutant("loader11", LO, "            self.cache = cache_for(hashed, cache_dir) if cache_dir else None",
           "            self.cache = cache_for(cfg, cache_dir) if cache_dir else None",
           "a served verifier's cache is not keyed by who serves it"),
    Mutant("loader11", LO, "                          sum(p.n_units for p in base), sum(p.n_cached for p in base))",
           "                          first.n_units, sum(p.n_cached for p in base))", "a stacked score counts only its first base's units"),
    # the service's request models
    Mutant("models11", SM, '    if m.passages is not None and m.ctxs is not None:\n        raise ValueError("give \'passages\' or \'ctxs\', not both")\n', "",
           "both 'passages' and 'ctxs': ctxs silently wins"),
    Mutant("models11", SM, "    citation_base: Literal[0, 1] | None = None\n    calibration: str | None = None\n    group: str | None = Field(None, max_length=200)",
           "    citation_base: Literal[0, 1] | None = None\n    calibration: str | None = None\n    group: str | None = Field(None)",
           "a proxy request's group name has no length limit"),
    Mutant("models11", SM, "        if (self.answers is None) == (self.answer is None):",
           "        if self.answers is None and self.answer is None:", "a request with both 'answer' and 'answers' is accepted"),
    # the CLI's shared options
    Mutant("cli11", CO, '        key, sep, value = ov.partition("=")', '        key, sep, value = ov.rpartition("=")',
           "--override KEY=VALUE splits at the value's last '='"),
    Mutant("cli11", CO, "    if args.threads is not None and args.threads < 1:", "    if args.threads is not None and args.threads < 0:",
           "--threads 0 is accepted"),
    # round 12 (2026-12-04, fourth session): the converter of released answers, the credentials in URLs, the
    # full-passage protocol and its score cache, the verifier hash; chosen from the code alone before any test
    # was read
    Mutant("convert12", GV, "ids = list(dict.fromkeys(str(idx + offset + 1) for _, _, idx in targets if idx is not None))",
           "ids = list(dict.fromkeys(str(idx + offset) for _, _, idx in targets if idx is not None))",
           "a converted marker points one passage early"),
    Mutant("convert12", GV, "    offset = len(passages)\n    passages.extend(cited)\n",
           "    passages.extend(cited)\n    offset = len(passages)\n", "a section's markers point past its own passages"),
    Mutant("convert12", GV, '"passages": rec["ctxs"], "citation_base": 0}', '"passages": rec["ctxs"], "citation_base": 1}',
           "an OpenScholar ctxs answer is read with [1] as its first passage"),
    Mutant("convert12", GV, "ids = list(dict.fromkeys(str(idx + offset + 1)", "ids = list((str(idx + offset + 1)",
           "a marker naming one source twice becomes [n, n]"),
    Mutant("redact12", LB, '    user, _, password = userinfo.partition(":")', '    user, _, password = userinfo.rpartition(":")',
           "a password holding ':' is split at its last ':'"),
    Mutant("redact12", LB, "            record.msg, record.args = clean, None", "            record.msg = clean",
           "a redacted log record keeps its arguments"),
    Mutant("redact12", LB, '_SECRET_PARAM = re.compile(r"([?&;](?:api', '_SECRET_PARAM = re.compile(r"([?&](?:api',
           "a credential after ';' in a URL is not redacted"),
    Mutant("protocol12", VB, "        best[i] = int(np.nanargmax(s))", "        best[i] = int(np.argmax(s))",
           "a pair with one unscored (NaN) window takes that window"),
    Mutant("protocol12", VB, "    if threshold is not None:  # verdict = score >= threshold, whatever threshold the cache was made with\n"
           "        u_verdict = u_score >= float(threshold)  # NaN compares False, quietly\n", "",
           "cached verdicts keep the threshold the cache was made with"),
    Mutant("protocol12", VB, '        return hashlib.sha256(f"{claim}\\x1f{window}".encode()).hexdigest()[:40]',
           '        return hashlib.sha256(f"{claim}{window}".encode()).hexdigest()[:40]',
           "the cache key runs claim and window together: ('ab', 'c') is ('a', 'bc')"),
    Mutant("protocol12", VB, "            chunk = list(keys[i:i + 500])", "            chunk = list(keys[i:i + 499])",
           "the cache lookup skips one key in every 500"),
    Mutant("protocol12", VB, '        if reason[i] == "empty_passage":\n            score[i] = 0.0\n',
           '        if reason[i] == "empty_passage":\n            score[i] = np.nan\n', "an empty passage has no score, not 0"),
    Mutant("hash12", HS, '    "resources", "batch_size", "device",', '    "resources", "batch_size", "device", "model",',
           "the model is left out of the verifier hash"),
    Mutant("hash12", HS, "if k not in RUNTIME_KEYS and not (k in EXACT_DEFAULTS and v == EXACT_DEFAULTS[k])})",
           "if k not in RUNTIME_KEYS and k not in EXACT_DEFAULTS})", "the runtime and quantisation never reach the hash"),
    Mutant("hash12", HS, 'or f.suffix in (".safetensors", ".bin")]', 'or f.suffix == ".safetensors"]',
           "a network's .bin weights are not in its digest"),
    Mutant("hash12", HS, "    parts = [_file_digest(str(f.resolve()), f.stat().st_mtime_ns, f.stat().st_size) for f in files]",
           "    parts = [_file_digest(str(f.resolve()), 0, f.stat().st_size) for f in files]",
           "a head rewritten at the same size keeps its old digest in a running process"),
    # round 13 (2026-12-04, fourth session): the study's generation and preparation, chosen from the code alone
    # before any test was read
    Mutant("generation13", GN, """return "\\n\\n".join(f"[{i + 1}] {p.get('title') or ''}""", """return "\\n\\n".join(f"[{i}] {p.get('title') or ''}""",
           "the prompt numbers passages from 0, the answers are read from 1"),
    Mutant("generation13", GN, '                for n, p in enumerate(it["passages"], 1):', '                for n, p in enumerate(it["passages"]):',
           "a per-passage step's notes are numbered from 0"),
    Mutant("generation13", GN, '            states[i]["prompt_tokens"] += o.prompt_tokens', '            states[i]["prompt_tokens"] = o.prompt_tokens',
           "an item's prompt tokens are its last call's, not its steps' sum"),
    Mutant("generation13", GN, "                    owners.append((i, n))", "                    owners.append((0, n))",
           "a batch's per-passage notes all go to its first item"),
    Mutant("generation13", GN, 'passages = [{"text": c.get("text"), "title": c.get("title") or ""} for c in ctxs if not is_blank(c.get("text"))]',
           'passages = [{"text": c.get("text"), "title": c.get("title") or ""} for c in ctxs]',
           "blank passages stay in a task (and shift the numbering)"),
    Mutant("generation13", GN, '                stats["errors" if r.get("output") is None else "generated"] += 1',
           '                stats["generated"] += 1', "a failed item counts as generated"),
    Mutant("prepare13", PP, "and len(self.seen_items) >= self.max_items:", "and len(self.seen_items) > self.max_items:",
           "max_items reads one item more"),
    Mutant("prepare13", PP, "            claim=claim[: self.claim_cap], passage=passage,", "            claim=claim, passage=passage,",
           "a prepared claim is not capped"),
    Mutant("prepare13", PP, '        s.n_unsupported = int((pairs["label"] == 0).sum())', '        s.n_unsupported = len(pairs) - s.n_supported',
           "unlabelled pairs count as unsupported"),
    Mutant("prepare13", PP, "                        if pidx not in cited:\n                            b.skip(", "                        if True:\n                            b.skip(",
           "a cited blank passage is also skipped as an empty candidate"),
    # round 14 (2026-12-04, fourth session): the trained verifier's network designs, chosen from the code alone
    # before any test was read
    Mutant("networks14", TN, "key=lambda w: (term_recall(claim, w), -windows.index(w)))", "key=lambda w: (term_recall(claim, w), windows.index(w)))",
           "a pair's training window is the last of tied ones"),
    Mutant("networks14", TN, '            out.append((i, next((docs[j] for j in order if docs[j] != own), "")))',
           '            out.append((i, docs[order[0]]))', "a hard negative may be the claim's own positive window"),
    Mutant("networks14", TN, '        for i in sup.index[sup["source"] == source]:', "        for i in sup.index:",
           "a source's BM25 index proposes hard negatives for every source's claims"),
    Mutant("networks14", TN, '        self.threshold = 0.5 if design == "cross_encoder" else 0.75',
           '        self.threshold = 0.75 if design == "cross_encoder" else 0.5', "the two designs' verdict cuts are swapped"),
    Mutant("networks14", TN, "            weight = torch.tensor(counts.sum() / (2 * np.maximum(counts, 1)), dtype=torch.float32)",
           "            weight = torch.tensor(counts / counts.sum(), dtype=torch.float32)",
           "the class weights favour the majority class"),
    Mutant("networks14", TN, "                if before < m <= seen and at_checkpoint is not None:",
           "                if before <= m < seen and at_checkpoint is not None:", "a checkpoint at a batch's last example is missed"),
    Mutant("networks14", TN, "                out[idx] = torch.softmax(self.model(**enc).logits.float(), -1)[:, 1].numpy()",
           "                out[i:i + 64] = torch.softmax(self.model(**enc).logits.float(), -1)[:, 1].numpy()",
           "a length-sorted batch's scores land in input order"),
    Mutant("networks14", TN, "        logits = c @ w.T / self.tau", "        logits = c @ w.T * self.tau",
           "InfoNCE multiplies by the temperature"),
]

# Mutants of earlier rounds whose code has moved since (guard.py's core to guarding/core.py, the visibility scanner
# rewritten, the budget to report.py, the batch token to AllOf, the reset route to admin_request): each follows its
# code here, with the same module and the same bug (keyed by the first words of its description).
CORE = "citebound/guarding/core.py"
MOVED = {
    "review budget over cited sentences": ("citebound/guarding/report.py", "        total = self.n_citations + extra\n",
                                           "        total = self.n_cited_sentences + extra\n"),
    "the first passage's citations become invalid": (CORE, None, None),
    "re-attribution may move a pointer onto": (CORE, None, None),
    "the first accepted proposal wins": (CORE, None, None),
    "a score equal to tau passes": (CORE, "passed = (s > tau if tau is not None", "passed = (s >= tau if tau is not None"),
    "a repeated pointer in one sentence": (CORE, None, None),
    "evidence and new pointers ignore": (CORE, None, None),
    "a marker whose first citation is verified": ("citebound/guarding/rewrite.py", "if all(passes(a) for a in audits) and not unsafe:",
                                                  "if passes(audits[0]) and not unsafe:"),
    "sentences with an invalid citation are not highlighted": (
        "citebound/guarding/audit_page.py", 'if a["action"] in ("flagged", "invalid", "unverified")}',
        'if a["action"] in ("flagged", "unverified")}'),
    "the review highlight's CSS class is dropped": ("citebound/guarding/audit_page.py", 'cls = "sent review" if si in review else',
                                                    'cls = "sent" if si in review else'),
    "a batch's review budget per answer": (
        "citebound/guarding/report.py",
        '    return sum(float(get(r, "review_budget", 0.0)) * w for r, w in zip(reports, weights)) / total if total else 0.0',
        '    return sum(float(get(r, "review_budget", 0.0)) for r in reports) / len(reports) if reports else 0.0'),
    "one timed-out request stops its batch-mates": ("citebound/scoring/deadline.py", "    combine = staticmethod(all)\n",
                                                    "    combine = staticmethod(any)\n"),
    "/v1/score past its timeout answers 500": ("citebound/serving/score_routes.py",
                                               "        except TimeoutError as e:\n            return timed_out(",
                                               "        except ValueError as e:\n            return timed_out("),
    "a nested hidden element ends at the first close tag": (
        "citebound/text/visible.py", "        for k in range(len(self.stack) - 1, -1, -1):\n            name, st, _ = self.stack[k]",
        "        for k in range(len(self.stack)):\n            name, st, _ = self.stack[k]"),
    "the action taken on void also fires on suspect": (
        "citebound/guarding/card.py", 'return self.on_void == "flag-all" and self.state in ("void", "unavailable")',
        'return self.on_void == "flag-all" and self.state in ("void", "unavailable", "suspect")'),
    "reset reads its body before the token": (
        "citebound/serving/monitor_routes.py",
        "        req = await admin_request(request, ResetIn)\n        if isinstance(req, JSONResponse):\n            return req\n        who =",
        "        req = ResetIn.model_validate(await request.json())\n        who ="),
}
for _k, _m in enumerate(MUTANTS):
    for _start, (_path, _old, _new) in MOVED.items():
        if _m.why.startswith(_start):
            MUTANTS[_k] = Mutant(_m.module, _path, _m.old if _old is None else _old, _m.new if _new is None else _new, _m.why)


TESTS = {
    "guarding": ["tests/guard/test_guarding.py", "tests/guard/test_guard_differential.py", "tests/guard/test_cli.py"],
    "citations": ["tests/guard/test_citations.py", "tests/guard/test_guard_differential.py", "tests/guard/test_limits.py"],
    "limits": ["tests/guard/test_limits.py", "tests/guard/test_hostile.py", "tests/guard/test_behaviours.py"],
    "reattributors": ["tests/guard/test_guarding.py", "tests/guard/test_guard_differential.py"],
    "audit_page": ["tests/guard/test_audit_page.py"],
    "conformal": ["tests/guard/test_edges.py", "tests/guard/test_conformal_stats.py", "tests/guard/test_pinned.py"],
    "stats": ["tests/guard/test_conformal_stats.py", "tests/guard/test_pinned.py"],
    "calibration": ["tests/guard/test_cli.py", "tests/guard/test_pinned.py", "tests/guard/test_conformal_stats.py"],
    "kit": ["tests/study/test_kit.py"],
    "verifiers.base": ["tests/guard/test_verifiers.py", "tests/guard/test_pinned.py"],
    "analysis": ["tests/study/test_pinned_analysis.py", "tests/guard/test_edges.py", "tests/study/test_failure_kinds_pr.py"],
    "labelling": ["tests/guard/test_labelling.py", "tests/guard/test_first_hour.py", "tests/guard/test_hostile.py",
                  "tests/guard/test_behaviours.py"],
    "service": ["tests/guard/test_service.py", "tests/guard/test_hostile.py", "tests/guard/test_behaviours.py",
                "tests/guard/test_unchecked.py", "tests/guard/test_hostile_generated.py"],
    "scoring": ["tests/guard/test_package.py"],
    "cli": ["tests/guard/test_labelling.py", "tests/guard/test_cli.py", "tests/guard/test_hostile_generated.py"],
    "failure_kinds": ["tests/study/test_failure_kinds_pr.py"],
    "citation_pr": ["tests/study/test_failure_kinds_pr.py"],
    "hashing": ["tests/guard/test_trained.py", "tests/guard/test_behaviours.py"],
    "training": ["tests/guard/test_trained.py", "tests/study/test_train_verifier.py", "tests/guard/test_behaviours.py"],
    "train_verifier": ["tests/study/test_train_verifier.py", "tests/guard/test_trained.py"],
    "card": ["tests/guard/test_card.py", "tests/guard/test_monitor.py", "tests/guard/test_state.py"],
    "mcp": ["tests/guard/test_mcp.py", "tests/guard/test_cross_face.py", "tests/guard/test_hostile_generated.py"],
    "security": ["tests/guard/test_security.py"],
    "ltt": ["tests/guard/test_ltt.py", "tests/guard/test_ltt_brute_force.py"],
    "batcher": ["tests/guard/test_batch_members.py", "tests/guard/test_behaviours.py"],
    "observability": ["tests/guard/test_observability.py"],
    "guarantees": ["tests/study/test_guarantees.py"],
    "report": ["tests/guard/test_cross_face.py", "tests/guard/test_actions.py", "tests/guard/test_guarding.py",
               "tests/guard/test_audit_page.py", "citebound/guarding/report.py"],
    "models": ["tests/guard/test_contradiction.py", "tests/guard/test_graph.py"],
    "eprocess": ["tests/guard/test_eprocess.py", "tests/guard/test_closed_loop.py"],
    "closed_loop": ["tests/guard/test_closed_loop.py"],
    "contradiction": ["tests/guard/test_contradiction.py"],
    "css": ["tests/guard/test_visible_forms.py", "tests/guard/test_unchecked.py", "tests/guard/test_hostile.py",
            "citebound/text/css.py", "citebound/text/visible.py"],
    "visible": ["tests/guard/test_visible_forms.py", "tests/guard/test_unchecked.py", "tests/guard/test_hostile.py",
                "tests/guard/test_complexity.py", "citebound/text/visible.py"],
    "forms": ["tests/guard/test_sup_exponents.py", "tests/guard/test_visible_forms.py", "tests/guard/test_unchecked.py", "citebound/text/forms.py"],
    "state": ["tests/guard/test_state.py", "tests/guard/test_state_concurrency.py", "tests/guard/test_store_down.py",
              "tests/guard/test_store_probe.py",
              "citebound/calibration/state.py"],
    "config": ["tests/guard/test_config_file.py", "tests/guard/test_cli_options.py"],
    "readiness": ["tests/guard/test_store_down.py", "tests/guard/test_service.py", "tests/guard/test_store_probe.py"],
    "structured": ["tests/guard/test_structured.py", "tests/guard/test_api_adapters.py", "tests/guard/test_cross_face.py",
                   "citebound/guarding/structured.py"],
    "held": ["tests/guard/test_chat_effects.py", "tests/guard/test_api_effects.py", "tests/guard/test_api_adapters.py", "tests/guard/test_cross_face.py", "tests/guard/test_stream_proxy.py",
             "tests/guard/test_proxy_routes.py"],
    "stream": ["tests/guard/test_structured.py", "tests/guard/test_stream_differential.py", "tests/guard/test_stream_proxy.py", "tests/guard/test_cross_face.py",
               "tests/guard/test_api_adapters.py"],
    "messages": ["tests/guard/test_api_effects.py", "tests/guard/test_api_adapters.py", "tests/guard/test_cross_face.py"],
    "responses": ["tests/guard/test_api_effects.py", "tests/guard/test_api_adapters.py", "tests/guard/test_cross_face.py"],
    "upstream": ["tests/guard/test_chat_effects.py", "tests/guard/test_wire_boundaries.py", "tests/guard/test_api_adapters.py", "tests/guard/test_proxy_routes.py", "tests/guard/test_stream_proxy.py",
                 "tests/guard/test_observed_effects.py", "tests/guard/test_proxy_unchecked.py"],
    "remote": ["tests/guard/test_wire_boundaries.py", "tests/guard/test_remote_verifier.py"],
    "http": ["tests/guard/test_wire_boundaries.py", "tests/guard/test_remote_verifier.py", "citebound/scoring/bounded_http.py"],
    "monitor": ["tests/guard/test_monitor.py", "tests/guard/test_closed_loop.py", "citebound/calibration/monitor.py"],
    "groups": ["tests/guard/test_groups.py", "tests/guard/test_cli.py"],
    "precision": ["tests/guard/test_precision.py"],
    "chatproxy": ["tests/guard/test_chat_effects.py", "tests/guard/test_stream_proxy.py", "tests/guard/test_proxy_routes.py", "tests/guard/test_observed_effects.py",
                  "tests/guard/test_proxy_unchecked.py", "tests/guard/test_wire_boundaries.py", "tests/guard/test_api_adapters.py"],
    "litellm": ["tests/guard/test_litellm_guardrail.py"],
    "service2": ["tests/guard/test_chat_effects.py", "tests/guard/test_guard_batch.py", "tests/guard/test_body_errors.py", "tests/guard/test_service.py", "tests/guard/test_hostile.py", "tests/guard/test_behaviours.py",
                 "tests/guard/test_observed_effects.py", "tests/guard/test_audit_page.py", "tests/guard/test_proxy_routes.py",
                 "tests/guard/test_batch_members.py"],
    "monitor2": ["tests/guard/test_monitor_effects.py", "tests/guard/test_admin_strict.py", "tests/guard/test_observability.py", "tests/guard/test_monitor.py",
                 "tests/guard/test_store_down.py", "tests/guard/test_store_probe.py", "tests/guard/test_groups.py",
                 "tests/guard/test_card.py"],
    "visible9": ["tests/guard/test_visible_edges.py"],
    "paths9": ["tests/guard/test_failure_paths.py", "tests/guard/test_hostile_streams.py"],
    "remote9": ["tests/guard/test_remote_verifier.py"],
    "http9": ["tests/guard/test_bounded_http.py"],
    "guard9": ["tests/guard/test_guard_api_edges.py", "tests/guard/test_cli_guard_edges.py", "tests/guard/test_mcp_inputs.py"],
    "calib9": ["tests/guard/test_calibration_edges.py", "tests/guard/test_card.py"],
    "cli9": ["tests/guard/test_config_file.py", "tests/guard/test_serve_boundaries.py", "tests/guard/test_label_cli_refusals.py",
             "tests/guard/test_cli_inputs.py", "tests/guard/test_labelling.py"],
    "batcher9": ["tests/guard/test_behaviours.py"],
    "apis9": ["tests/guard/test_api_effects.py"],
    "binomial10": ["tests/guard/test_binomial.py", "tests/guard/test_calibration_edges.py", "tests/guard/test_conformal_stats.py",
                   "tests/guard/test_ltt.py", "tests/guard/test_precision.py", "tests/guard/test_pinned.py",
                   "citebound/calibration/binomial.py"],
    "trained10": ["tests/guard/test_trained.py", "tests/guard/test_graph.py", "tests/study/test_train_verifier.py",
                  "tests/guard/test_behaviours.py", "tests/guard/test_verifiers.py", "tests/guard/test_pinned.py",
                  "tests/guard/test_trained_features.py", "tests/study/test_train_networks.py",
                  "citebound/verifiers/trained.py", "citebound/training/head.py"],
    "graph10": ["tests/guard/test_graph.py", "tests/guard/test_verifiers.py", "tests/guard/test_unchecked.py",
                "tests/guard/test_model_verifiers.py", "tests/guard/test_trained.py", "citebound/verifiers/graph.py"],
    "lexical10": ["tests/guard/test_verifiers.py", "tests/guard/test_trained.py", "tests/guard/test_llm_verifiers.py",
                  "tests/study/test_pinned_analysis.py", "tests/guard/test_lexical_terms.py", "citebound/verifiers/lexical.py"],
    "judge10": ["tests/guard/test_llm_verifiers.py", "tests/guard/test_unchecked.py", "tests/guard/test_complexity.py",
                "tests/guard/test_llm_judge_effects.py",
                "citebound/verifiers/llm_judge.py"],
    "chatep10": ["tests/study/test_paperqa.py", "tests/guard/test_llm_verifiers.py", "tests/study/test_chat_endpoint.py",
                 "citebound/scoring/chat_endpoint.py"],
    "analysis10": ["tests/guard/test_edges.py", "tests/study/test_pinned_analysis.py",
                   "citebound/study/analysis/reattribution.py"],
    "io10": ["tests/guard/test_hostile_generated.py", "tests/study/test_io_prepare.py", "tests/study/test_train_data.py",
             "tests/study/test_train_verifier.py", "tests/study/test_generation.py", "tests/guard/test_read_records.py",
             "citebound/scoring/io.py"],
    "stats11": ["tests/guard/test_conformal_stats.py", "tests/study/test_pinned_analysis.py", "tests/guard/test_edges.py",
                "tests/guard/test_pinned.py", "citebound/calibration/stats.py"],
    "groups11": ["tests/guard/test_groups.py", "tests/guard/test_cli.py", "tests/guard/test_calibration_edges.py",
                 "tests/guard/test_calibrate_cli_edges.py", "tests/guard/test_calibration_summary.py"],
    "files11": ["tests/guard/test_cli.py", "tests/guard/test_pinned.py", "tests/guard/test_edges.py", "tests/guard/test_calibration_edges.py",
                "tests/guard/test_calibrate_cli_edges.py", "tests/guard/test_groups.py", "tests/guard/test_eprocess.py",
                "tests/guard/test_calibration_summary.py", "citebound/calibration/files.py"],
    "loader11": ["tests/guard/test_remote_verifier.py", "tests/guard/test_verifiers.py", "tests/guard/test_package.py"],
    "models11": ["tests/guard/test_service.py", "tests/guard/test_guard_batch.py", "tests/guard/test_body_errors.py",
                 "tests/guard/test_groups.py", "tests/guard/test_proxy_routes.py", "tests/guard/test_request_models.py"],
    "cli11": ["tests/guard/test_cli.py", "tests/guard/test_cli_options.py", "tests/guard/test_cli_inputs.py",
              "tests/guard/test_cli_common.py",
              "citebound/cli/common.py"],
    "convert12": ["tests/guard/test_guarding.py", "tests/guard/test_first_hour.py", "tests/guard/test_citations.py",
                  "tests/study/test_failure_kinds_pr.py", "citebound/guarding/convert.py"],
    "redact12": ["tests/guard/test_security.py", "tests/guard/test_observed_effects.py", "tests/guard/test_llm_verifiers.py",
                 "tests/guard/test_remote_verifier.py", "tests/guard/test_credentials_in_urls.py",
                 "citebound/scoring/llm_backends.py"],
    "protocol12": ["tests/guard/test_verifiers.py", "tests/guard/test_pinned.py", "tests/guard/test_edges.py",
                   "tests/guard/test_remote_verifier.py", "tests/guard/test_llm_verifiers.py", "tests/guard/test_protocol_edges.py",
                   "citebound/verifiers/base.py"],
    "hash12": ["tests/guard/test_trained.py", "tests/guard/test_behaviours.py", "tests/guard/test_verifiers.py",
               "tests/guard/test_remote_verifier.py", "tests/study/test_train_networks.py", "tests/guard/test_hash_edges.py",
               "citebound/scoring/hashing.py"],
    "generation13": ["tests/study/test_generation.py", "tests/study/test_paperqa.py", "tests/study/test_interrupt.py",
                     "tests/study/test_study_counts.py", "citebound/study/generation.py"],
    "prepare13": ["tests/study/test_io_prepare.py", "tests/study/test_failure_kinds_pr.py", "tests/study/test_kit.py",
                  "tests/study/test_study_counts.py", "citebound/study/prepare.py"],
    "networks14": ["tests/study/test_train_networks.py", "tests/study/test_train_verifier.py", "citebound/study/train_networks.py"],
    "serve_cli": ["tests/guard/test_serve_boundaries.py", "tests/guard/test_cli.py", "tests/guard/test_cli_options.py", "tests/guard/test_config_file.py"],
}
COPY = ["citebound", "tests", "config", "workflow", "scripts", "Snakefile", "pyproject.toml", "LICENSE", "README.md", "docs", ".ci",
        "benchmarks"]


def covering_tests(data_file: str, mutants: list[Mutant]) -> dict[str, list[str]]:
    """Per mutant (by description), the fast tests that ran its lines, from a coverage data file recorded with
    ``dynamic_context = test_function`` (benchmarks/coverage_contexts.rc): the whole fast tier's verdict on a
    mutant without running the whole tier for each. A context coverage cannot name a test by (one recorded inside
    hypothesis' engine) adds the module's own test files; code the tests run in a subprocess is not seen."""
    from coverage import CoverageData

    data = CoverageData(data_file)
    data.read()
    files = {p.stem: p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    out: dict[str, list[str]] = {}
    for m in mutants:
        src = (ROOT / m.path).read_text()
        start = src.index(m.old)
        lines = range(src[:start].count("\n") + 1, src[:start + len(m.old)].count("\n") + 2)
        by_line = data.contexts_by_lineno(str(ROOT / m.path))
        nodes: set[str] = set()
        for context in {c for n in lines for c in by_line.get(n, []) if c}:
            mod, _, func = context.partition(".")
            if mod in files:
                nodes.add(files[mod] + "::" + func.replace(".", "::"))
            else:
                nodes.update(TESTS[m.module])
        out[m.why] = sorted(nodes)
    return out


def run(mutants: list[Mutant], timeout: int, selected: dict[str, list[str]] | None = None) -> list[tuple[Mutant, str, float]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="citebound-mutants-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        for name in COPY:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tree / name)
        # the scratch tree has no ../shared beside it: the tests that read the data mirror would skip (and a
        # mutant only they catch would survive), so the mirror is named explicitly
        mirror = os.environ.get("CITEBOUND_DATA_MIRROR") or str(ROOT.parent / "shared" / "data")
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", CITEBOUND_DATA_MIRROR=mirror)

        def tests_pass(tests: list[str], show: bool = False) -> bool:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow",
                                "--no-header", *tests], cwd=tree, env=env, capture_output=True, text=True,
                               timeout=timeout)
            if show and r.returncode != 0:
                print(r.stdout[-3000:], r.stderr[-2000:])
            return r.returncode == 0

        def tests_of(m: Mutant) -> list[str]:
            return TESTS[m.module] if selected is None else selected[m.why]

        # baseline: every module's tests pass on the unmutated copy, so a failure below is the mutant's doing
        if selected is None:
            for module in sorted({m.module for m in mutants}):
                if not tests_pass(TESTS[module], show=True):
                    raise SystemExit(f"the tests of {module} ({TESTS[module]}) fail without any mutant: fix that first")
        else:
            every = sorted({t for m in mutants for t in selected[m.why]})
            if every and not tests_pass(every, show=True):
                raise SystemExit("the selected tests fail without any mutant: fix that first")
        for m in mutants:
            path = tree / m.path
            original = path.read_text()
            if original.count(m.old) != 1:
                raise SystemExit(f"{m.path}: the text to mutate occurs {original.count(m.old)} times, not once: {m.old!r}")
            path.write_text(original.replace(m.old, m.new))
            t0 = time.perf_counter()
            try:
                if not tests_of(m):
                    verdict = "survived"  # no fast test runs its lines
                else:
                    verdict = "survived" if tests_pass(tests_of(m)) else "killed"
            except subprocess.TimeoutExpired:
                verdict = "killed (timeout)"
            finally:
                path.write_text(original)
            out.append((m, verdict, time.perf_counter() - t0))
            print(f"{verdict:9s} {m.module:15s} {time.perf_counter() - t0:5.1f}s  {m.why}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="run these modules' mutants (comma-separated)")
    ap.add_argument("--round", type=int, choices=[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
                    help="run one round's mutants (3: the 2026-12-02 round; 4: #45's, on that turn's code; 5 and 6: 2026-12-03's; 7 to 14: 2026-12-04's)")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--match", help="only the mutants whose description holds this text")
    ap.add_argument("--moved", action="store_true", help="only the earlier rounds' mutants that follow moved code (MOVED)")
    ap.add_argument("--tests", nargs="+", help="run these test files instead of each module's own")
    ap.add_argument("--by-coverage", metavar="DATA_FILE",
                    help="run, for each mutant, the fast tests that ran its lines (a coverage data file with test "
                         "contexts: benchmarks/coverage_contexts.rc) instead of its module's test files")
    args = ap.parse_args()
    first3 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("merged requests get the first request's"))
    first4 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("the action taken on void also fires"))
    first5 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a client that disconnects keeps holding"))
    first6 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a merged call stops only when"))
    first7 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a negative offset (left:-9999px)"))
    first8 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a search_result block's text is not"))
    first9 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a tag longer than MAX_TAG is still read"))
    first10 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("the windowed upper tail (n > 100000)"))
    first11 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("negative specific agreement leaves"))
    first12 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a converted marker points one passage early"))
    first13 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("the prompt numbers passages from 0"))
    first14 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a pair's training window is the last of tied"))
    rounds = {None: MUTANTS, 2: MUTANTS[:first3], 3: MUTANTS[first3:first4], 4: MUTANTS[first4:first5],
              5: MUTANTS[first5:first6], 6: MUTANTS[first6:first7],
              7: MUTANTS[first7:first8], 8: MUTANTS[first8:first9], 9: MUTANTS[first9:first10],
              10: MUTANTS[first10:first11], 11: MUTANTS[first11:first12],
              12: MUTANTS[first12:first13], 13: MUTANTS[first13:first14],
              14: MUTANTS[first14:]}
    todo = [m for m in rounds[args.round] if args.only is None or m.module in args.only.split(",")]
    todo = [m for m in todo if args.match is None or args.match in m.why]
    todo = [m for m in todo if not args.moved or any(m.why.startswith(k) for k in MOVED)]
    if args.tests:
        for m in todo:
            TESTS[m.module] = args.tests
    results = run(todo, args.timeout, covering_tests(args.by_coverage, todo) if args.by_coverage else None)
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for m, verdict, _ in results:
        per[m.module][0] += verdict.startswith("killed")
        per[m.module][1] += 1
    print("\n| module | mutants | killed | kill rate |\n|---|---|---|---|")
    for mod, (k, n) in per.items():
        print(f"| {mod} | {n} | {k} | {100 * k / n:.0f}% |")
    k = sum(v[0] for v in per.values())
    n = sum(v[1] for v in per.values())
    print(f"| **all** | {n} | {k} | {100 * k / n:.1f}% |")
    survivors = [m for m, verdict, _ in results if verdict == "survived"]
    for m in survivors:
        print(f"SURVIVOR {m.module}: {m.path}: {m.old!r} -> {m.new!r} ({m.why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
