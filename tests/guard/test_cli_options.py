"""Every option of every subcommand reaches what it names, seen at the command line's level: a test lists the
options from the parser and fails when one appears in no test that runs its subcommand; the options no other test
ran are run here, each with an effect observed (the guard or scorer the command builds, the effective config
`serve --print-config` prints, the cache a command writes, what `citebound train` hands its trainer)."""
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from citebound.cli.main import main, parse


def _parser():
    import argparse

    from citebound.cli.main import build_parser

    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {cmd: sorted({o for a in sp._actions for o in a.option_strings if o.startswith("--") and o != "--help"})
            for cmd, sp in subs.choices.items()}


def test_every_cli_option_appears_in_a_test_that_runs_its_subcommand():
    """A test file runs subcommand CMD when it names it as the CLI does (``"CMD"`` in an argv list, ``citebound
    CMD``); each of CMD's options must appear in one such file."""
    texts = [p.read_text() for p in (ROOT / "tests").rglob("*") if p.suffix in (".py", ".sh") and p.is_file()]
    untested = []
    for cmd, options in _parser().items():
        runs = [t for t in texts if re.search(rf'["\']{cmd}["\']|citebound {cmd}\b', t)]
        untested += [f"{cmd} {o}" for o in options if not any(o in t for t in runs)]
    assert untested == []


SHARED = ["--verifier", "embedding", "--reattributor", "verifier", "--action", "block", "--block-above", "0.4",
          "--uncited", "ignore", "--on-error", "open", "--on-void", "flag-all", "--limit", "max_passages=7",
          "--runtime", "onnx", "--quantize", "none", "--threads", "1"]


@pytest.mark.parametrize("cmd", ["guard", "mcp"])
def test_the_guard_options_reach_the_guard_each_command_builds(cmd, tmp_path):
    from citebound.cli.guard import make_guard
    from citebound.cli.mcp import mcp_guard

    state, cache = tmp_path / "monitor.sqlite", tmp_path / "cache"
    args = parse([cmd, *SHARED, "--state", f"sqlite:///{state}", "--cache-dir", str(cache)])
    g = make_guard(args) if cmd == "guard" else mcp_guard(args)
    assert (g.action, g.block_above, g.uncited, g.on_error) == ("block", 0.4, "ignore", "open")
    assert g.reattributor.name == "verifier" and g.limits.max_passages == 7
    assert g.calibrations.pooled.on_void == "flag-all"
    assert {k: g.scorer.cfg[k] for k in ("runtime", "quantize", "threads")} == {"runtime": "onnx", "quantize": "none",
                                                                                 "threads": 1}
    assert Path(g.scorer.cache_dir) == cache
    g.guard("Statins lower LDL [1].", ["Statins lower LDL."])
    assert state.exists()  # the monitor keeps its state where --state says


def test_guard_reads_jsonl_by_flag_and_caches_scores_where_told(tmp_path, capsys):
    """--jsonl: an input named .txt read as JSONL (two answers, two output lines); --cache-dir: the scores land there
    and a second run reads them (same output); --uncited ignore: the uncited sentence is out of the budget (0, not
    1/2); --on-error open is recorded on nothing here, but parsed: the run succeeds."""
    src, out, cache = tmp_path / "answers.txt", tmp_path / "out.jsonl", tmp_path / "cache"
    p = ["Statins lower LDL cholesterol.", "Mitochondria make ATP."]
    rows = [{"id": "a", "answer": "Statins lower LDL cholesterol [1]. Aspirin is old.", "passages": p},
            {"id": "b", "answer": "Mitochondria make ATP [2].", "passages": p}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["guard", "--input", str(src), "--jsonl", "--out", str(out), "--verifier", "embedding", "--quiet",
            "--cache-dir", str(cache), "--uncited", "ignore", "--on-error", "open"]
    assert main(argv) == 0
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in first] == ["a", "b"] and first[0]["report"]["review_budget"] == 0.0
    assert first[0]["report"]["uncited"] == 1 and first[0]["report"]["uncited_policy"] == "ignore"
    assert any(cache.rglob("*")), "nothing was cached"
    assert main(argv) == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == first


@pytest.mark.parametrize("cmd", ["score", "calibrate"])
def test_the_scorer_options_reach_the_scorer(cmd, tmp_path):
    """--cache-dir and --threads of the commands that load a scorer: the scorer they build carries them."""
    from citebound.cli.common import make_scorer

    argv = {"score": ["score", "--input", "x.jsonl"], "calibrate": ["calibrate", "--labels", "x.jsonl"]}[cmd]
    args = parse([*argv, "--verifier", "embedding", "--cache-dir", str(tmp_path), "--threads", "1"])
    s = make_scorer(args)
    assert Path(s.cache_dir) == tmp_path and s.cfg["threads"] == 1


def test_label_scores_its_sample_into_the_cache_dir(tmp_path):
    """citebound label's session scores the sampled citations through --cache-dir: the cache fills, and a second
    session (the same labels file, resumed) finds the same scores."""
    from citebound.cli.label import make_label_session

    src, cache = tmp_path / "answers.jsonl", tmp_path / "cache"
    src.write_text(json.dumps({"id": "a", "answer": "Statins lower LDL [1]. Mitochondria make ATP [2].",
                               "passages": ["Statins lower LDL.", "Mitochondria make ATP."]}) + "\n")
    argv = ["label", "--input", str(src), "--out", str(tmp_path / "labels.jsonl"), "--verifier", "embedding",
            "--cache-dir", str(cache), "--threads", "1"]
    first = make_label_session(parse(argv))
    assert any(p.is_file() for p in cache.rglob("*")), "nothing was cached"
    again = make_label_session(parse(argv))
    assert [it.score for it in again.sample] == [it.score for it in first.sample] and first.sample[0].score is not None


SERVE = {"--max-batch-units": ("max_batch_units", "64", 64), "--max-wait-ms": ("max_wait_ms", "7", 7.0),
         "--block-above": ("block_above", "0.3", 0.3), "--on-error": ("on_error", "open", "open"),
         "--on-void": ("on_void", "flag-all", "flag-all"), "--runtime": ("runtime", "onnx", "onnx"),
         "--quantize": ("quantize", "int8", "int8")}


def test_serve_options_reach_the_service_config():
    """What serve hands the service (its ServeConfig), from the same options."""
    pytest.importorskip("fastapi")
    from citebound.cli.serve import serve_config

    argv = ["serve", "--action", "block", "--runtime", "onnx", "--quantize", "int8", "--threads", "2"]
    for option, (_, value, _) in SERVE.items():
        if option not in ("--runtime", "--quantize"):
            argv += [option, value]
    cfg = serve_config(parse(argv))
    assert (cfg.max_batch_units, cfg.max_wait_ms, cfg.block_above, cfg.on_error, cfg.on_void) == (64, 7.0, 0.3, "open",
                                                                                                   "flag-all")
    assert cfg.runtime == {"runtime": "onnx", "quantize": "int8", "threads": 2}


def test_serve_options_are_keys_of_the_effective_config(tmp_path, capsys):
    pw = tmp_path / "redis.pw"
    pw.write_text("s3cret-password\n")
    argv = ["serve", "--print-config", "--action", "block", "--state-password-file", str(pw), "--cache-dir", str(tmp_path)]
    for option, (_, value, _) in SERVE.items():
        argv += [option, value]
    assert main(argv) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert {key: cfg[key] for key, _, _ in SERVE.values()} == {key: want for key, _, want in SERVE.values()}
    assert cfg["state_password_file"] == str(pw) and cfg["cache_dir"] == str(tmp_path)
    assert "s3cret" not in json.dumps(cfg)  # a secret is read from its file, never printed


def test_monitor_seed_is_the_tie_breaking_draws_seed(monkeypatch, tmp_path):
    """--seed reaches the calibrations the monitor command builds (recorded where it builds them), over reports that
    `citebound guard` wrote with the lexical verifier's shipped calibration."""
    import citebound.guarding.card as card

    seen = []
    real = card.Calibrations

    def recording(*a, **kw):
        seen.append(kw.get("seed"))
        return real(*a, **kw)

    reports = tmp_path / "r.json"
    example = str(ROOT / "citebound/examples/answer.json")
    assert main(["guard", "--input", example, "--verifier", "lexical", "--out", str(reports), "--quiet"]) == 0
    monkeypatch.setattr(card, "Calibrations", recording)
    assert main(["monitor", "--verifier", "lexical", "--reports", str(reports), "--seed", "17",
                 "--out", str(tmp_path / "card.json")]) == 0
    assert seen == [17]


def test_train_hands_its_options_to_the_trainer(monkeypatch, tmp_path):
    """--encoder, --margin and --threads reach train_own as given (a recording trainer stands in: the real one is run by
    tests/guard/test_trained.py)."""
    pytest.importorskip("sklearn")
    import citebound.training.own as own

    got = {}

    def recording(pairs, evals, **kw):
        got.update(kw)
        raise SystemExit(0)

    monkeypatch.setattr(own, "train_own", recording)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"claim": f"c{i}", "passage": f"p{i}", "label": i % 2}) + "\n" for i in range(40)))
    with pytest.raises(SystemExit):
        main(["train", "--input", str(pairs), "--out", str(tmp_path / "m"), "--encoder", "package:other", "--margin", "0.2",
              "--threads", "2", "--quiet"])
    assert (got["encoder"], got["margin"], got["threads"]) == ("package:other", 0.2, 2)


def test_example_chat_is_the_proxys_request(capsys):
    assert main(["example", "--chat"]) == 0
    path = Path(capsys.readouterr().out.strip())
    body = json.loads(path.read_text())
    assert path.name == "chat.json" and body["messages"] and body["citebound"]["passages"]


def test_help_shows_each_options_text_and_a_default_only_where_one_is_set(capsys):
    """citebound guard --help: an option with no default (--html) and a flag (--remove) show their help text with no
    "(default: ...)" after it; an option with one (--input) shows it."""
    import re

    from citebound.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["guard", "--help"])
    assert e.value.code == 0
    out = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--html FILE also write a self-contained HTML audit page --calibration" in out
    assert "--remove " in out and "(default: False)" not in out and "(default: None)" not in out
    assert "'-' = stdin (default: -)" in out


REQUIRED = {  # by hand, from each command's docs: what it cannot run without, and a line without each
    "monitor": (["--reports", "r.jsonl", "--verifier", "embedding"],
                {"--reports": ["--verifier", "embedding"], "--calibration --verifier": ["--reports", "r.jsonl"]}),
    "train": (["--input", "p.jsonl", "--out", "model"], {"--input": ["--out", "model"], "--out": ["--input", "p.jsonl"]}),
    "convert": (["--format", "nora", "x.json"], {"--format": ["x.json"], "path": ["--format", "nora"]}),
}


def test_the_required_options_are_these_and_each_missing_one_is_named(capsys):
    """Each command's required options (a required group as its options), as the parser declares them, are the
    table's; each left out of an otherwise full command line stops it with status 2 naming what is missing."""
    import argparse

    from citebound.cli.main import build_parser

    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    declared = {}
    for cmd, sp in subs.choices.items():
        need = [a.option_strings[0] if a.option_strings else a.dest for a in sp._actions if a.required]
        need += [" ".join(a.option_strings[0] for a in g._group_actions) for g in sp._mutually_exclusive_groups
                 if g.required]
        if need:
            declared[cmd] = sorted(need)
    assert declared == {cmd: sorted(without) for cmd, (_, without) in REQUIRED.items()}
    for cmd, (argv, without) in REQUIRED.items():
        assert parse([cmd, *argv]).command == cmd  # the full line parses
        for opt, left in without.items():
            capsys.readouterr()
            with pytest.raises(SystemExit) as e:
                parse([cmd, *left])
            err = capsys.readouterr().err
            assert e.value.code == 2 and "required" in err and opt.split()[0] in err, (cmd, opt, err)
