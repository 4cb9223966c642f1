"""Credentials in URLs, by hand: the userinfo split into user and password at the user's end (a password may hold
':' and '@'), percent-escapes undone; and every credential-bearing query parameter redacted, whatever separates it."""
import logging

import pytest

from citebound.scoring.llm_backends import install_log_redaction, redact_url, split_userinfo


@pytest.mark.parametrize("url, bare, creds", [
    ("http://me:pa:ss@host:8/v1", "http://host:8/v1", ("me", "pa:ss")),       # ':' in the password
    ("http://me:p@ss@host/v1", "http://host/v1", ("me", "p@ss")),            # '@' in the password
    ("http://me:p%3As%40s@host/v1?x=1", "http://host/v1?x=1", ("me", "p:s@s")),
    ("http://me@host/v1", "http://host/v1", ("me", "")),                     # a user without a password
    ("http://:tok@host", "http://host", ("", "tok")),
    ("https://host/v1", "https://host/v1", None),
])
def test_split_userinfo_by_hand(url, bare, creds):
    assert split_userinfo(url) == (bare, creds)


@pytest.mark.parametrize("text, clean", [
    ("GET http://h/v1?api_key=SECRET&model=m", "GET http://h/v1?api_key=***&model=m"),
    # after ';' too; the value runs to the next '&', '#', quote or space (a secret may hold ';')
    ("GET http://h/v1?model=m;token=SECRET;x=1", "GET http://h/v1?model=m;token=***"),
    ("GET http://h/v1?model=m&Access-Token=SECRET", "GET http://h/v1?model=m&Access-Token=***"),
    ("at http://u:SECRET@h/v1 and http://h2/v1?key=K2#frag", "at http://***@h/v1 and http://h2/v1?key=***#frag"),
    ("no credentials in http://h/v1?model=m", "no credentials in http://h/v1?model=m"),
])
def test_redact_url_by_hand(text, clean):
    assert redact_url(text) == clean


def test_a_log_record_is_redacted_once_formatted(caplog):
    install_log_redaction()
    with caplog.at_level(logging.INFO, logger="httpx"):
        logging.getLogger("httpx").info("HTTP Request: %s %s", "POST", "http://me:SECRET@h/v1?api_key=K")
    assert caplog.records[-1].getMessage() == "HTTP Request: POST http://***@h/v1?api_key=***"
    assert "SECRET" not in caplog.text and "api_key=K" not in caplog.text


@pytest.mark.parametrize("n", [1, 64, 65, 4096, 4097, 20_000])
def test_a_credential_parameter_is_redacted_whole_whatever_its_length(n):
    """The whole value goes, however long: a bound on the redacted run would leave a long token's tail in the log."""
    secret = "k" * n
    assert redact_url(f"GET http://h/v1?api_key={secret}&model=m") == "GET http://h/v1?api_key=***&model=m"
    assert redact_url(f"GET http://h/v1?token={secret}") == "GET http://h/v1?token=***"
