"""citebound serve's option checks at their boundaries, each value on both sides worked by hand: the port (1 to
65535), --max-wait-ms and --drain-grace (0 allowed: no wait, no grace), --request-timeout (above 0), --workers (1 or
more; more than one needs a store the workers share: not memory://). An accepted command line reaches the point
where uvicorn would start (recorded here instead of binding a port); a refused one is one error line, status 2."""
import pytest

pytest.importorskip("fastapi")

from citebound.cli.main import main  # noqa: E402


@pytest.fixture
def started(monkeypatch):
    """What serve() would have been started with."""
    calls = []
    monkeypatch.setattr("citebound.serving.serve", lambda cfg, **kw: calls.append((cfg, kw)))
    return calls


@pytest.mark.parametrize("argv,ok,message", [
    (["--port", "0"], False, "--port must be from 1 to 65535"),
    (["--port", "1"], True, None),
    (["--port", "65535"], True, None),
    (["--port", "65536"], False, "--port must be from 1 to 65535"),
    (["--max-wait-ms", "0"], True, None),
    (["--max-wait-ms", "-1"], False, "--max-wait-ms and --drain-grace >= 0"),
    (["--drain-grace", "0"], True, None),
    (["--drain-grace", "-0.5"], False, "--max-wait-ms and --drain-grace >= 0"),
    (["--request-timeout", "0"], False, "--request-timeout must be > 0"),
    (["--request-timeout", "0.001"], True, None),
    (["--workers", "0"], False, "--workers must be >= 1"),
    (["--workers", "1", "--state", "memory://"], True, None),
    (["--workers", "2", "--state", "memory://"], False, "memory:// is one process's own"),
    (["--workers", "2"], False, "needs --state PATH"),
    (["--workers", "2", "--state", "{tmp}/m.sqlite"], True, None),
])
def test_serve_options_at_their_boundaries(argv, ok, message, started, capsys, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = main(["serve", "--verifier", "lexical", *argv])
    err = capsys.readouterr().err
    if ok:
        assert code == 0 and len(started) == 1, err
        cfg, kw = started[0]
        if "--port" in argv:
            assert kw["port"] == int(argv[argv.index("--port") + 1])
        if "--max-wait-ms" in argv:
            assert cfg.max_wait_ms == float(argv[argv.index("--max-wait-ms") + 1])
        if "--workers" in argv:
            assert kw["workers"] == int(argv[argv.index("--workers") + 1])
    else:
        assert code == 2 and not started
        assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv,ok,message", [
    (["--passages-prompt", "Use these: {passages}"], True, None),
    (["--passages-prompt", "default"], True, None),
    (["--passages-prompt", "Use these: {passage}"], False, "--passages-prompt: the template must contain {passages}"),
    (["--calibrations", "{tmp}"], True, None),
    (["--calibrations", "{tmp}/none"], False, "none: no such folder (--calibrations takes a folder"),
    (["--max-batch-units", "0"], False, "--max-batch-units must be >= 1, got 0"),
    (["--max-batch-units", "1"], True, None),
    (["--upstream-auth", "own"], False, "--upstream-auth and --upstream-key-file are for the proxy: give --upstream"),
    (["--upstream", "http://127.0.0.1:9", "--upstream-auth", "own"], False, "--upstream-auth own needs --upstream-key-file"),
    (["--upstream", "http://127.0.0.1:9", "--upstream-auth", "client", "--upstream-key-file", "{tmp}/key"], False,
     "--upstream-key-file is never sent with --upstream-auth client"),
    (["--upstream", "http://u:p@127.0.0.1:9", "--upstream-key-file", "{tmp}/key"], False,
     "--upstream has credentials in its URL and --upstream-key-file gives another"),
    (["--upstream", "http://127.0.0.1:9", "--upstream-key-file", "{tmp}/key"], True, None),
    (["--upstream", "http://127.0.0.1:9", "--upstream-key-file", "{tmp}/empty"], False,
     "--upstream-key-file {tmp}/empty: it is empty: write the secret on its first line"),
    (["--upstream", "http://127.0.0.1:9", "--upstream-key-file", "{tmp}/missing"], False,
     "--upstream-key-file {tmp}/missing: cannot read a secret from it"),
])
def test_serve_refuses_what_it_cannot_use_in_one_line(argv, ok, message, started, capsys, tmp_path):
    """Each refusal names the option and what to do; an accepted line reaches serve() with what it gave."""
    (tmp_path / "key").write_text("sk-upstream-key\n")
    (tmp_path / "key").chmod(0o600)
    (tmp_path / "empty").write_text("\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = main(["serve", "--verifier", "lexical", *argv])
    err = capsys.readouterr().err
    if ok:
        assert code == 0 and len(started) == 1, err
        cfg, _ = started[0]
        if "--passages-prompt" in argv:
            from citebound.serving.state import DEFAULT_PASSAGES_PROMPT

            given = argv[argv.index("--passages-prompt") + 1]
            assert cfg.passages_prompt == (DEFAULT_PASSAGES_PROMPT if given == "default" else given)
        if "--upstream-key-file" in argv:
            assert cfg.upstream_key == "sk-upstream-key" and cfg.upstream_auth == "own"
        if "--max-batch-units" in argv:
            assert cfg.max_batch_units == 1
    else:
        assert code == 2 and not started
        assert message.replace("{tmp}", str(tmp_path)) in err and err.count("\n") == 1, err
        assert "sk-upstream-key" not in err


def test_an_unknown_verifier_is_refused_before_serve_naming_the_nearest(started, capsys):
    assert main(["serve", "--verifier", "lexicl"]) == 2 and not started
    err = capsys.readouterr().err
    assert "lexicl" in err and "lexical" in err and err.count("\n") == 1, err


@pytest.fixture
def demo(monkeypatch):
    """The demo upstream's start, recorded instead of loading SmolLM2 (tests/guard/test_demo_upstream.py runs it)."""
    starts = []

    def start():
        starts.append(True)
        return "http://127.0.0.1:9", None

    monkeypatch.setattr("citebound.serving.demo_upstream.start_demo_upstream", start)
    return starts


@pytest.mark.parametrize("argv,prompt", [([], "default"),
                                         (["--passages-prompt", "Only these: {passages}"], "Only these: {passages}")])
def test_the_demo_upstream_keeps_a_given_prompt_and_takes_a_key_file(argv, prompt, demo, started, capsys, tmp_path):
    from citebound.serving.state import DEFAULT_PASSAGES_PROMPT

    (tmp_path / "key").write_text("sk-demo-key\n")
    (tmp_path / "key").chmod(0o600)
    code = main(["serve", "--verifier", "lexical", "--demo-upstream", "--upstream-key-file", str(tmp_path / "key"), *argv])
    assert code == 0 and demo == [True], capsys.readouterr().err
    cfg = started[0][0]
    assert cfg.passages_prompt == (DEFAULT_PASSAGES_PROMPT if prompt == "default" else prompt)
    assert (cfg.upstream, cfg.upstream_key, cfg.upstream_auth) == ("http://127.0.0.1:9", "sk-demo-key", "own")


def test_the_demo_upstream_is_refused_with_several_workers_before_it_loads(demo, started, capsys, tmp_path):
    code = main(["serve", "--verifier", "lexical", "--demo-upstream", "--workers", "2", "--state", str(tmp_path / "m.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and not demo and not started
    assert "--demo-upstream is the upstream, in this one process: not with --upstream or --workers" in err


@pytest.mark.parametrize("argv,reattributor", [
    ([], "bm25"), (["--reattributor", "verifier"], "verifier"), (["--no-reattribute"], None),
    (["--no-reattribute", "--reattributor", "verifier"], None)])
def test_the_services_reattributor(argv, reattributor, started):
    assert main(["serve", "--verifier", "lexical", *argv]) == 0
    assert started[0][0].reattributor == reattributor
