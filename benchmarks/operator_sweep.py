"""Mutants by operator, to find comparisons, off-by-ones and conditions that no test pins, on the lines of the named
modules that the fast tier runs, each mutant run against the fast tests that ran its line (a context coverage, as
``semantic_mutants.py --by-coverage`` uses): those in its module's own test files first, the rest only if they
pass (the same verdict, a kill sooner). Prints each verdict and the survivors.

``--ops boundary`` (the default): every ``<``, ``<=``, ``>`` and ``>=`` flipped to its neighbour, and every ``+ 1``
and ``- 1`` dropped. ``--ops logic``: ``and`` and ``or`` swapped, ``==`` and ``!=``, ``is`` and ``is not``, ``in``
and ``not in`` (in a comparison, not a ``for``), a unary ``not`` dropped, ``min`` and ``max``, ``any`` and ``all``,
``True`` and ``False``. ``--ops arith``: a binary ``+`` and ``-`` swapped, ``*`` and ``/``, ``//`` to ``/`` (a wrong
denominator, a sign, a scale), and a call's first two arguments swapped where both are names or attributes (a
swapped argument).

A survivor is a candidate, not a finding: many flips are equivalent (a float that never equals its bound, a loop
whose last step changes nothing, a result trimmed afterwards). Judge each, and write the ones that change what a
user gets as a test, with the value worked out by hand. Unlike ``semantic_mutants.py``, the mutants are generated,
not written: this sweep is for finding, not for a kill rate.

    pip install coverage   # not a dependency of citebound
    python -m coverage run --rcfile=benchmarks/coverage_contexts.rc -m pytest -q -m "not slow"   # ~9 min
    python benchmarks/operator_sweep.py .coverage-contexts citebound/guarding/stream.py citebound/text/forms.py
    python benchmarks/operator_sweep.py --ops logic .coverage-contexts citebound/calibration/eprocess.py
    python benchmarks/operator_sweep.py --ops logic --tests tests/guard/test_litellm_guardrail.py -- - \
        citebound/integrations/litellm_guardrail.py   # every line, against these tests

The coverage must be recorded on the code as it is (line numbers). A test is missing from a line's contexts when
the line runs under ``asyncio.run`` inside it, in a fixture (a module-scoped one runs before the test's context
starts: the audit page's), or in a process it starts (the MCP server over stdio, the LiteLLM hooks: ``--tests``
names those): confirm a survivor against its module's own test files before writing a test for it.
"""
from __future__ import annotations

import argparse
import io
import keyword
import sys
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import semantic_mutants as sm  # noqa: E402

FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
SWAP_NAME = {"and": "or", "or": "and", "True": "False", "False": "True"}
SWAP_CALL = {"min": "max", "max": "min", "any": "all", "all": "any"}


def logic(toks: list[tokenize.TokenInfo], i: int) -> list[tuple[tuple[int, int], tuple[int, int], str, str]]:
    """The logic mutants at token ``i``: (start, end, replacement, what)."""
    t = toks[i]
    before = toks[i - 1] if i else None
    after = toks[i + 1] if i + 1 < len(toks) else None
    if t.type == tokenize.OP and t.string in ("==", "!="):
        new = "!=" if t.string == "==" else "=="
        return [(t.start, t.end, new, f"{t.string} -> {new}")]
    if t.type != tokenize.NAME:
        return []
    if t.string in SWAP_NAME:
        return [(t.start, t.end, SWAP_NAME[t.string], f"{t.string} -> {SWAP_NAME[t.string]}")]
    if t.string in SWAP_CALL and after is not None and after.string == "(" and (before is None or before.string != "."):
        return [(t.start, t.end, SWAP_CALL[t.string], f"{t.string}() -> {SWAP_CALL[t.string]}()")]
    if t.string == "is":
        if after is not None and after.string == "not":
            return [(t.start, after.end, "is", "is not -> is")]
        return [(t.start, t.end, "is not", "is -> is not")]
    if t.string == "not":
        if before is not None and before.string == "is":
            return []
        if after is not None and after.string == "in":
            return [(t.start, after.end, "in", "not in -> in")]
        return [(t.start, after.start, "", "drop not")] if after is not None and after.start[0] == t.start[0] else []
    if t.string == "in" and (before is None or before.string != "not"):
        # a comparison's ``in``, not a ``for``'s: the nearest ``for`` or comparison start on the line decides
        k = i - 1
        while k >= 0 and toks[k].start[0] == t.start[0] and toks[k].string not in ("for", "if", "elif", "while",
                                                                                   "return", "and", "or", "=", "("):
            k -= 1
        if k >= 0 and toks[k].string == "for":
            return []
        return [(t.start, t.end, "not in", "in -> not in")]
    return []


ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "//": "/"}
OPERAND_END = (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)


def arith(toks: list[tokenize.TokenInfo], i: int) -> list[tuple[tuple[int, int], tuple[int, int], str, str]]:
    """The arithmetic mutants at token ``i``: a binary operator swapped, or a call's two first arguments."""
    t = toks[i]
    before = toks[i - 1] if i else None
    if t.type == tokenize.OP and t.string in ARITH and before is not None and (
            (before.type in OPERAND_END and not keyword.iskeyword(before.string)) or before.string in (")", "]")):
        return [(t.start, t.end, ARITH[t.string], f"{t.string} -> {ARITH[t.string]}")]
    if (t.string == "(" and before is not None and before.type == tokenize.NAME and not keyword.iskeyword(before.string)
            and before.string not in ("min", "max")):  # their arguments' order does not matter
        # f(a.b, c) -> f(c, a.b): the two first arguments, each a dotted name, on the call's line
        k, args = i + 1, []
        while len(args) < 2:
            j = k
            while j < len(toks) and (toks[j].type == tokenize.NAME or toks[j].string == ".") and toks[j].start[0] == t.start[0]:
                j += 1
            if j == k or j >= len(toks) or toks[j].string not in (",", ")") or keyword.iskeyword(toks[k].string):
                return []
            args.append((toks[k].start, toks[j - 1].end))
            if toks[j].string == ")":
                break
            k = j + 1
        if len(args) == 2:
            (a0, a1), (b0, b1) = args
            first, second = t.line[a0[1]:a1[1]], t.line[b0[1]:b1[1]]
            types = ("int", "float", "str", "bool", "bytes")  # asarray(x, float): a swap that only fails to run
            if first != second and second not in types and a0[0] == b1[0]:
                return [(a0, b1, f"{second}, {first}", f"arguments swapped: {first}, {second}")]
    return []


def mutants(path: str, covered: set[int], ops: str = "boundary") -> list[sm.Mutant]:
    """The mutants of one module, on its covered lines; each one exact replacement of a line (with the lines before
    it, as many as make it occur once)."""
    src = (sm.ROOT / path).read_text()
    offs = [0]
    for line in src.splitlines(keepends=True):
        offs.append(offs[-1] + len(line))
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    out = []
    for i, t in enumerate(toks):
        found = []
        if ops == "logic":
            found = logic(toks, i)
        elif ops == "arith":
            found = arith(toks, i)
        elif t.type == tokenize.OP and t.string in FLIP:
            found.append((t.start, t.end, FLIP[t.string], f"{t.string} -> {FLIP[t.string]}"))
        after = toks[i + 1] if i + 1 < len(toks) else None
        before = toks[i - 1]
        if (ops == "boundary" and t.type == tokenize.OP and t.string in ("+", "-") and after is not None
                and after.type == tokenize.NUMBER and after.string == "1"
                and before.type in (tokenize.NAME, tokenize.NUMBER, tokenize.OP)
                and before.string not in ("(", "[", ",", "=", ":") and not keyword.iskeyword(before.string)):
            found.append((t.start, after.end, "", f"drop {t.string} 1"))
        for (r0, c0), (r1, c1), new, what in found:
            if r0 not in covered or r0 != r1:
                continue
            a, b = offs[r0 - 1] + c0, offs[r1 - 1] + c1
            lo, hi, k = offs[r0 - 1], offs[r0], 1
            while src.count(src[lo:hi]) != 1 and r0 - 1 - k >= 0:
                lo, k = offs[r0 - 1 - k], k + 1
            line = src[offs[r0 - 1]:offs[r0]].strip()
            out.append(sm.Mutant("sweep", path, src[lo:hi], src[lo:a] + new + src[b:hi],
                                 f"{path}:{r0}:{c0 + 1}: {what}: {line[:100]}"))
    return out


def own(module: str, test: str) -> bool:
    """Whether ``test`` (a node id) is in one of ``module``'s own test files: its file's name holds the module's
    name, or a word of it other than ``api``, less a plural's ``s`` (``test_citations.py`` for ``citations.py``,
    ``test_visible_tree.py`` for ``visible.py``, ``test_mcp.py`` for ``mcp_server.py``, ``test_responses_values.py``
    for ``api_responses.py``)."""
    stem = Path(module).stem
    names = {stem.rstrip("s")} | {w.rstrip("s") for w in stem.split("_") if len(w) >= 3 and w != "api"}
    return any(n in Path(test.split("::")[0]).stem for n in names)


def main() -> int:
    from coverage import CoverageData

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("coverage", help="a coverage data file with test contexts (benchmarks/coverage_contexts.rc)")
    ap.add_argument("modules", nargs="+",
                    help="module paths, relative to the repository root; PATH:N mutates PATH from its line N on (to "
                         "carry on a sweep that was stopped)")
    ap.add_argument("--timeout", type=int, default=1500, help="seconds for one mutant's tests")
    ap.add_argument("--baseline-timeout", type=int, default=None,
                    help="seconds for the baseline (every selected test, unmutated; default: --timeout)")
    ap.add_argument("--ops", choices=["boundary", "logic", "arith"], default="boundary", help="which operators to mutate")
    ap.add_argument("--list", action="store_true", help="print the mutants on covered lines and run nothing")
    ap.add_argument("--tests", nargs="+", metavar="TEST",
                    help="mutate every line and run these tests against each mutant, instead of the coverage's (for "
                         "code the fast tier runs in a subprocess, which coverage does not see: the LiteLLM "
                         "guardrail's hooks); the coverage argument is then not read")
    args = ap.parse_args()
    start = {}
    for i, p in enumerate(args.modules):
        path, _, line = p.partition(":")
        args.modules[i], start[path] = path, int(line or 1)
    if args.tests:
        every = {p: set(range(1, len((sm.ROOT / p).read_text().splitlines()) + 1)) for p in args.modules}
    else:
        data = CoverageData(args.coverage)
        data.read()
        every = {p: set(data.lines(str(sm.ROOT / p)) or []) for p in args.modules}
    found = [m for p in args.modules for m in mutants(p, {n for n in every[p] if n >= start[p]}, args.ops)]
    if args.list:
        for m in found:
            print(m.why)
        return 0
    sm.TESTS["sweep"] = []  # a line run only by a test coverage cannot name has no tests: it is reported, not run
    selected = {m.why: list(args.tests) for m in found} if args.tests else sm.covering_tests(args.coverage, found)
    todo = [m for m in found if selected[m.why]]
    print(f"{len(found)} mutants on covered lines, {len(todo)} with covering tests", flush=True)
    # the module's own test files first (test_visible_*.py for visible.py, test_citations.py for citations.py):
    # most mutants die there, without collecting every file that happens to run the line
    first = {m.why: [t for t in selected[m.why] if own(m.path, t)] for m in todo}
    results = sm.run(todo, args.timeout, selected, first, args.baseline_timeout)
    for m, verdict, _ in results:
        if verdict == "survived":
            print("SURVIVOR", m.why)
    return 0


if __name__ == "__main__":
    sys.exit(main())
