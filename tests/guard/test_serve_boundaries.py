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
