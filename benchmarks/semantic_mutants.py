"""Realistic, behaviour-changing mutants (hand-written patches), each run against the fast tests of its
module; prints the kill rate per module and names every survivor.

mutmut's syntactic score (benchmarks/mutation.sh) counts mutants that often make no difference to a
reader's number; these are the bugs a reviewer plants: wrong denominators, a boundary off by one, a
dropped CSS class, swapped parameters. Each mutant is one exact text replacement in one file, with a
line on why it changes behaviour. The script works on a scratch copy of the tree and never edits the
checkout.

    python benchmarks/semantic_mutants.py            # all mutants (~5 minutes on 2 cores)
    python benchmarks/semantic_mutants.py --only kit # one module's
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
    # ---- round 4 (2026-12-02, #45): chosen from the code and the classes before re-reading the tests
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
    "serve_cli": ["tests/guard/test_serve_boundaries.py", "tests/guard/test_cli.py", "tests/guard/test_cli_options.py", "tests/guard/test_config_file.py"],
}
COPY = ["citebound", "tests", "config", "workflow", "scripts", "Snakefile", "pyproject.toml", "LICENSE", "README.md", "docs", ".ci",
        "benchmarks"]


def run(mutants: list[Mutant], timeout: int) -> list[tuple[Mutant, str, float]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="citebound-mutants-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        for name in COPY:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tree / name)
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")

        def tests_pass(module: str, show: bool = False) -> bool:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow",
                                "--no-header", *TESTS[module]], cwd=tree, env=env, capture_output=True, text=True,
                               timeout=timeout)
            if show and r.returncode != 0:
                print(r.stdout[-3000:], r.stderr[-2000:])
            return r.returncode == 0

        # baseline: every module's tests pass on the unmutated copy, so a failure below is the mutant's doing
        for module in sorted({m.module for m in mutants}):
            if not tests_pass(module, show=True):
                raise SystemExit(f"the tests of {module} ({TESTS[module]}) fail without any mutant: fix that first")
        for m in mutants:
            path = tree / m.path
            original = path.read_text()
            if original.count(m.old) != 1:
                raise SystemExit(f"{m.path}: the text to mutate occurs {original.count(m.old)} times, not once: {m.old!r}")
            path.write_text(original.replace(m.old, m.new))
            t0 = time.perf_counter()
            try:
                verdict = "survived" if tests_pass(m.module) else "killed"
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
    ap.add_argument("--round", type=int, choices=[2, 3, 4, 5, 6, 7, 8],
                    help="run one round's mutants (3: the 2026-12-02 round; 4: #45's, on that turn's code; 5 and 6: 2026-12-03's; 7 and 8: 2026-12-04's)")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--match", help="only the mutants whose description holds this text")
    ap.add_argument("--moved", action="store_true", help="only the earlier rounds' mutants that follow moved code (MOVED)")
    ap.add_argument("--tests", nargs="+", help="run these test files instead of each module's own")
    args = ap.parse_args()
    first3 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("merged requests get the first request's"))
    first4 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("the action taken on void also fires"))
    first5 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a client that disconnects keeps holding"))
    first6 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a merged call stops only when"))
    first7 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a negative offset (left:-9999px)"))
    first8 = next(i for i, m in enumerate(MUTANTS) if m.why.startswith("a search_result block's text is not"))
    rounds = {None: MUTANTS, 2: MUTANTS[:first3], 3: MUTANTS[first3:first4], 4: MUTANTS[first4:first5],
              5: MUTANTS[first5:first6], 6: MUTANTS[first6:first7],
              7: MUTANTS[first7:first8], 8: MUTANTS[first8:]}
    todo = [m for m in rounds[args.round] if args.only is None or m.module in args.only.split(",")]
    todo = [m for m in todo if args.match is None or args.match in m.why]
    todo = [m for m in todo if not args.moved or any(m.why.startswith(k) for k in MOVED)]
    if args.tests:
        for m in todo:
            TESTS[m.module] = args.tests
    results = run(todo, args.timeout)
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
