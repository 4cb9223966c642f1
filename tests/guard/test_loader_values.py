"""The verifier loader's protocol and probes (#56 round 66): windows every ``stride`` characters (not laid end to
end) and a verifier's own ``max_windows`` obeyed, with counts worked out by hand; a misspelt ``--override`` key
refused naming the nearest one; a served model that cannot be reached a clear VerifierLoadError; the hub probe
bounded by its seconds even while a name lookup hangs, and sent to HF_ENDPOINT's host and port."""
from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace

import pytest

from citebound import definitions
from citebound.scoring import loader
from citebound.scoring.loader import PairScorer, VerifierLoadError, load_scorer

CLAIM = "Statins lower LDL cholesterol."


def passage(n: int) -> str:
    """``n`` characters of filler (no term of CLAIM) with CLAIM's words only in the last 40."""
    filler = ("filler words here " * 200)[: n - 40]
    return filler + " Statins lower LDL cholesterol in adults."[:40].rjust(40)


def test_windows_start_every_stride_characters():
    # 1,200 characters, windows of 600 every 300: they start at 0, 300 and 600 (the last reaches the end), so 3;
    # laid end to end (stride 600) there would be 2
    p = passage(1200)
    assert len(p) == 1200
    out = PairScorer({"name": "lexical", "kind": "lexical"}, {}, definitions.windowing()).score([CLAIM], [p])
    assert out.n_windows.tolist() == [3] and out.score.tolist() == [1.0] and out.best_window.tolist() == [2]


def test_a_verifiers_own_max_windows_is_obeyed():
    # max_windows 1: only the first 600 characters are read, and CLAIM's words are past them: score 0
    p = passage(1200)
    one = PairScorer({"name": "lexical", "kind": "lexical", "windowing": {"max_windows": 1}}, {}, definitions.windowing())
    out = one.score([CLAIM], [p])
    assert out.n_windows.tolist() == [1] and out.score.tolist() == [0.0]


def test_a_misspelt_override_key_is_refused_naming_the_nearest_key():
    with pytest.raises(VerifierLoadError, match=r"unknown config key 'threshhold' in --override; did you mean 'threshold'\?"):
        load_scorer("lexical", {"threshhold": 0.5})
    assert load_scorer("lexical", {"threshold": 0.5}).cfg["threshold"] == 0.5


def test_a_served_model_that_cannot_be_reached_is_a_load_error_naming_the_verifier():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(VerifierLoadError, match="cannot load verifier 'remote_nli'"):
        load_scorer("remote_nli", {"url": f"http://127.0.0.1:{port}", "identity_check_seconds": 2, "timeout_seconds": 2,
                                   "max_retries": 0})


def test_the_hub_probe_is_bounded_while_the_name_lookup_hangs(monkeypatch):
    release = threading.Event()

    def hang(address, timeout=None):  # a resolver that never answers (getaddrinfo takes no timeout)
        release.wait(10)
        raise OSError("no answer")

    monkeypatch.setattr(loader, "socket", SimpleNamespace(create_connection=hang))  # the loader's name only
    t = time.perf_counter()
    try:
        assert loader.hub_reachable(0.3) is False
        assert time.perf_counter() - t < 2.0
    finally:
        release.set()


@pytest.mark.parametrize("endpoint,where", [("https://hf-mirror.example.org", ("hf-mirror.example.org", 443)),
                                            ("http://10.0.0.7:8080/hub", ("10.0.0.7", 8080)),
                                            ("https://mirror.example:8443", ("mirror.example", 8443)),
                                            (None, ("huggingface.co", 443))])
def test_the_hub_probe_asks_hf_endpoints_host_and_port(monkeypatch, endpoint, where):
    seen = []

    class Conn:
        def close(self):
            pass

    def connect(address, timeout=None):
        seen.append(address)
        return Conn()

    if endpoint is None:
        monkeypatch.delenv("HF_ENDPOINT", raising=False)
    else:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(loader, "socket", SimpleNamespace(create_connection=connect))  # the loader's name only
    assert loader.hub_reachable(2.0) is True and seen == [where]


def test_closing_a_stacked_verifier_closes_its_bases_caches(tmp_path):
    import json

    mp = tmp_path / "fitted.json"
    mp.write_text(json.dumps({"features": ["lexical", "lexical"], "coef": [1.0, 1.0], "intercept": 0.0}))
    lexical = definitions.load("verifier", "lexical")
    scorer = PairScorer(definitions.load("verifier", "fitted"), {"lexical": lexical}, definitions.windowing(),
                        cache_dir=tmp_path / "cache", model_path=mp)
    out = scorer.score([CLAIM], [passage(700)])
    assert out.score.shape == (1,) and [b.cache is not None for b in scorer.bases] == [True, True]
    scorer.close()
    assert [b.cache for b in scorer.bases] == [None, None]


def test_an_endpoint_whose_port_is_not_a_number_is_probed_at_the_default_port(monkeypatch):
    seen = []

    def connect(address, timeout=None):
        seen.append(address)
        raise OSError("refused")

    monkeypatch.setenv("HF_ENDPOINT", "https://mirror.example:port")
    monkeypatch.setattr(loader, "socket", SimpleNamespace(create_connection=connect))  # the loader's name only
    assert loader.hub_reachable(2.0) is False and seen == [("mirror.example", 443)]
