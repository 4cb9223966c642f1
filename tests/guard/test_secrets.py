"""Secrets read from files and the environment: a key file's first line is the key (a later line is a note to its
owner, never part of it), and an API key variable that is set but empty is as missing as one that is not set."""
import pytest

from citebound.scoring.llm_backends import MissingAPIKey, api_key, build_backend, read_secret
from citebound.verifiers.remote import auth_headers


def test_a_key_file_gives_its_first_line(tmp_path):
    p = tmp_path / "key"
    p.write_text("\n  sk-first-line \n# rotated 2026-12-01, previous key below\nsk-old\n")
    assert read_secret(p) == "sk-first-line"
    assert auth_headers({"api_key_file": str(p)}, "nli") == {"Authorization": "Bearer sk-first-line"}


@pytest.mark.parametrize("value", ["", None])
def test_an_empty_or_unset_api_key_variable_is_missing(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CITEBOUND_TEST_KEY", raising=False)
    else:
        monkeypatch.setenv("CITEBOUND_TEST_KEY", value)
    cfg = {"name": "judge", "api_key_env": "CITEBOUND_TEST_KEY", "backend": "openai", "base_url": "http://127.0.0.1:9/v1",
           "model": "m"}
    with pytest.raises(MissingAPIKey, match=r"verifier judge: set the API key in \$CITEBOUND_TEST_KEY"):
        api_key(cfg)
    with pytest.raises(MissingAPIKey, match=r"\$CITEBOUND_TEST_KEY"):
        build_backend(cfg)
    monkeypatch.setenv("CITEBOUND_TEST_KEY", "k")
    assert api_key(cfg) == "k"
