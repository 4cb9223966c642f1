"""The options every command shares, at their edges: --override splits at its first '=' (a URL's query keeps
its own), values read as JSON where they are JSON; --threads 0 is refused before any model loads; a guard
command with --threads 0 exits 2 naming it."""
import argparse
import json

import pytest

from citebound.cli.common import CLIError, parse_overrides, runtime_args
from citebound.cli.main import main


def test_override_splits_at_the_first_equals_sign():
    got = parse_overrides(["base_url=http://h:8000/v1?a=b&c=d", "threshold=0.7", "name=x=y", "device=cpu",
                           "max_retries=0", "flag=true", "empty="])
    assert got == {"base_url": "http://h:8000/v1?a=b&c=d", "threshold": 0.7, "name": "x=y", "device": "cpu",
                   "max_retries": 0, "flag": True, "empty": ""}
    assert parse_overrides(None) == {}
    for bad in ("=v", "novalue"):
        with pytest.raises(CLIError, match="--override expects key=value"):
            parse_overrides([bad])


@pytest.mark.parametrize("threads, ok", [(None, True), (1, True), (0, False), (-1, False)])
def test_threads_is_at_least_one(threads, ok):
    args = argparse.Namespace(threads=threads, runtime=None, quantize=None)
    if ok:
        assert runtime_args(args) == {"runtime": None, "quantize": None, "threads": threads}
    else:
        with pytest.raises(CLIError, match=f"--threads must be >= 1, got {threads}"):
            runtime_args(args)


def test_guard_with_threads_0_exits_2_naming_it(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]}) + "\n")
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--threads", "0", "--quiet"]) == 2
    assert "--threads must be >= 1, got 0" in capsys.readouterr().err


def test_no_subcommands_help_shows_a_default_of_none_or_false():
    """A flag's default (False) and an option without one (None) are said in the help's words, never as
    '(default: False)' or '(default: None)'; a real default is shown."""
    from citebound.cli.main import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(sub.choices) >= 8
    for name, p in sub.choices.items():
        text = p.format_help()
        assert "(default: False)" not in text and "(default: None)" not in text, name
    assert "(default: annotate)" in sub.choices["guard"].format_help()


@pytest.mark.parametrize("item,why", [("max_passages=-5", "limit max_passages must be a positive integer, got -5"),
                                      ("max_passages=0", "limit max_passages must be a positive integer, got 0"),
                                      ("max_passages=x", "--limit expects NAME=INTEGER, got 'max_passages=x'"),
                                      ("max_passages", "--limit expects NAME=INTEGER, got 'max_passages'")])
def test_a_bad_limit_is_refused_with_the_reason_that_fits(item, why):
    from citebound.cli.common import parse_limits

    with pytest.raises(CLIError) as e:
        parse_limits([item])
    assert str(e.value) == why
    assert parse_limits(["max_passages=7"]).max_passages == 7


def test_a_limit_value_is_read_up_to_18_characters():
    """Eighteen characters are read as a number (here past the hard ceiling, which says so); a nineteenth is refused
    before any number is made of it (a huge integer is never parsed)."""
    from citebound.cli.common import parse_limits

    with pytest.raises(CLIError, match="is past its hard ceiling"):
        parse_limits(["max_request_bytes=" + "9" * 18])
    with pytest.raises(CLIError, match="limit max_passages must be a positive integer"):
        parse_limits(["max_passages=-" + "9" * 17])
    for item in ("max_request_bytes=" + "9" * 19, "max_passages=-" + "9" * 18):
        with pytest.raises(CLIError, match="--limit expects NAME=INTEGER"):
            parse_limits([item])


@pytest.mark.parametrize("url", ["", "   ", "\t"])
def test_a_state_of_nothing_but_spaces_names_no_store(url):
    from citebound.cli.common import check_state

    with pytest.raises(CLIError, match="--state '': give a SQLite path"):
        check_state(url, wait_s=0)


def _policy(**kw):
    base = dict(action="annotate", remove=False, block_above=None, on_error="closed", on_void="annotate",
                uncited="flag", state=None)
    return argparse.Namespace(**(base | kw))


def test_the_policy_options_reach_the_guard_each_as_given():
    from citebound.cli.common import policy_kwargs

    got = policy_kwargs(_policy(action="remove", remove=True, on_error="open", on_void="flag-all", uncited="ignore",
                                state="sqlite:///s.db"))
    assert got == {"action": "remove", "block_above": None, "on_error": "open", "on_void": "flag-all",
                   "uncited": "ignore", "state": "sqlite:///s.db"}
    assert policy_kwargs(_policy(remove=True))["action"] == "remove"
    assert policy_kwargs(_policy(action="block", block_above=0.2))["block_above"] == 0.2


@pytest.mark.parametrize("kw,why", [
    ({"action": "block", "remove": True, "block_above": 0.2}, "--remove contradicts --action block"),
    ({"action": "block"}, "--action block needs --block-above X"),
    ({"block_above": 0.2}, "--block-above is only for --action block"),
    ({"action": "remove", "block_above": 0.2}, "--block-above is only for --action block"),
])
def test_contradicting_policy_options_are_refused(kw, why):
    from citebound.cli.common import policy_kwargs

    with pytest.raises(CLIError, match=why):
        policy_kwargs(_policy(**kw))


def test_calibration_none_deploys_no_calibration(tmp_path):
    """The shipped lexical calibration is deployed by default; --calibration none leaves the verifier's own verdict."""
    from citebound.cli.common import build_guard
    from citebound.cli.main import build_parser

    src = tmp_path / "a.jsonl"
    src.write_text("{}\n")
    parse = build_parser().parse_args
    shipped = build_guard(parse(["guard", "--input", str(src), "--verifier", "lexical"]))
    none = build_guard(parse(["guard", "--input", str(src), "--verifier", "lexical", "--calibration", "none"]))
    assert shipped.calibration is not None and shipped.tau is not None
    assert none.calibration is None and none.tau is None


def test_a_store_that_is_no_database_is_refused_at_once_and_one_that_does_not_answer_is_waited_for(tmp_path):
    """A SQLite file holding text is no database: waiting will not change that, so it is refused at once (not
    after --state's 30 s). A Redis port nobody listens on may be Redis starting beside the service: it is asked
    again each second until the wait (1.5 s here) is spent, then refused, naming the wait."""
    import socket
    import time

    from citebound.cli.common import check_state

    junk = tmp_path / "junk.db"
    junk.write_text("this is not a database, it is text " * 200)
    t0 = time.monotonic()
    with pytest.raises(CLIError, match="not a database"):
        check_state(f"sqlite:///{junk}", wait_s=30)
    assert time.monotonic() - t0 < 5
    with socket.socket() as s:  # a port nobody listens on (bound, then closed)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(CLIError, match=r"waited 1.5 s"):
        check_state(f"redis://127.0.0.1:{port}/0", wait_s=1.5)
    assert time.monotonic() - t0 >= 1.5
