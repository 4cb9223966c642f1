"""Strict admin inputs (#52 item 4): labels are JSON integers, the token is checked before anything is parsed,
lone surrogates are a 422, and the token file is checked (mode, characters, length) at start."""
import json
import os

import httpx
import pytest

from citebound.cli.common import CLIError
from citebound.cli.serve import MIN_TOKEN_CHARS, admin_token
from citebound.serving import ServeConfig
from tests.service_helpers import running

ADMIN = "s3cret-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="module")
def url():
    with running(ServeConfig(verifier="lexical", admin_token=ADMIN)) as u:
        yield u


@pytest.mark.parametrize("missed", [True, False, "3", " 10 ", 3.0, None, [1]])
def test_labels_are_integers_never_booleans_strings_or_floats(url, missed):
    before = httpx.get(f"{url}/v1/monitor").json()["default"]
    r = httpx.post(f"{url}/v1/monitor/labels", json={"missed": missed, "unsupported": 10}, headers=AUTH)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "missed"]
    assert httpx.get(f"{url}/v1/monitor").json()["default"] == before  # the e-process did not move


def test_an_integer_label_moves_the_e_process(url):
    r = httpx.post(f"{url}/v1/monitor/labels", json={"missed": 0, "unsupported": 1}, headers=AUTH)
    assert r.status_code == 200


@pytest.mark.parametrize("body", ['{"missed": 0, "unsupported": 1, "group": "\\ud800"}',
                                  '{"missed": 0, "unsupported": 1, "profile": "\\udfff"}'])
def test_a_lone_surrogate_is_a_422_naming_the_field(url, body):
    r = httpx.post(f"{url}/v1/monitor/labels", content=body, headers=AUTH | {"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][0] == "body"  # the JSON reader or the field's check
    assert "surrogate" in json.dumps(r.json()) or "escape" in json.dumps(r.json())


@pytest.mark.parametrize("route", ["/v1/monitor/labels", "/v1/monitor/reset"])
@pytest.mark.parametrize("body", ["{not json", '{"missed": "x"}', "", "[]", "\xff\xfe"])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-xxxxxxxxxx"}, {"Authorization": ADMIN}])
def test_401_before_anything_is_parsed(url, route, body, headers):
    r = httpx.post(f"{url}{route}", content=body.encode("latin-1"), headers=headers | {"content-type": "application/json"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


def test_a_malformed_body_with_the_token_is_a_422(url):
    r = httpx.post(f"{url}/v1/monitor/labels", content=b"{not json", headers=AUTH | {"content-type": "application/json"})
    assert r.status_code == 422


def _token_file(tmp_path, content: bytes, mode: int = 0o600):
    p = tmp_path / "token"
    p.write_bytes(content)
    os.chmod(p, mode)
    return str(p)


def test_the_token_file_boundaries(tmp_path, capsys):
    assert admin_token(_token_file(tmp_path, b"a" * MIN_TOKEN_CHARS + b"\n")) == "a" * 16  # the shortest allowed
    with pytest.raises(CLIError, match="at least 16"):
        admin_token(_token_file(tmp_path, b"a" * (MIN_TOKEN_CHARS - 1)))  # one shorter
    with pytest.raises(CLIError, match="cannot travel in an HTTP header"):
        admin_token(_token_file(tmp_path, b"\x00" * 40))
    with pytest.raises(CLIError, match="character 9"):
        admin_token(_token_file(tmp_path, "abcdefgh\u00e9abcdefghij".encode()))
    assert capsys.readouterr().err == ""
    assert admin_token(_token_file(tmp_path, b"b" * 20, 0o644)) == "b" * 20
    err = capsys.readouterr().err
    assert "can be read by other users (mode 644)" in err and "chmod 600" in err
    admin_token(_token_file(tmp_path, b"b" * 20, 0o640))
    assert "mode 640" in capsys.readouterr().err


def test_a_lone_surrogate_in_a_scored_pair_is_a_422_naming_it(url):
    """#52 item 9: /v1/score answered a lone surrogate with a 500 (the 422's echo of the input could not be
    encoded); the 422 names the field."""
    body = b'{"pairs": [{"claim": "ok", "passage": "x"}, {"claim": "a \\ud800", "passage": "x"}]}'
    r = httpx.post(f"{url}/v1/score", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "pairs", 1, "claim"]
    assert "surrogate" in r.json()["detail"][0]["msg"]


@pytest.mark.parametrize("token,bad", [(b"abcdefgh ijklmnopq", 9), (b"abcdefgh\tijklmnopq", 9),
                                       (b"abcdefghijklmnop\x7f", 17), (b"!bcdefghijklmno~", None)])
def test_a_token_character_outside_printable_ascii_is_named(tmp_path, token, bad):
    """0x21 '!' to 0x7e '~' travel in a header as they are; a space (0x20), a tab or DEL (0x7f) does not."""
    if bad is None:
        assert admin_token(_token_file(tmp_path, token)) == token.decode()
        return
    with pytest.raises(CLIError, match=f"character {bad} of the token"):
        admin_token(_token_file(tmp_path, token))
