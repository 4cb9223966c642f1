"""#53 item 2: one config file for serve. Every flag is a key (a test lists them from the parser), CITEBOUND_*
variables override the file and flags override both, --print-config round-trips, and each bad key or value is
one line naming the file and the key."""
import pytest
import yaml

from citebound.cli.main import build_parser, main


def _serve_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["serve"]


def test_every_serve_flag_is_a_key():
    from citebound.cli.config_file import schema

    sp = _serve_parser()
    flags = {o for a in sp._actions for o in a.option_strings if o.startswith("--")} - {"--help", "--config",
                                                                                       "--print-config"}
    assert {"--" + k.replace("_", "-") for k in schema(sp)} == flags


def test_print_config_round_trips_and_precedence_is_flag_env_file(tmp_path, capsys, monkeypatch):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"verifier": "lexical", "port": 9000, "limit": ["max_passages=50"], "uncited": "ignore",
                                 "no_reattribute": True, "request_timeout": 12.5, "state": "sqlite:///m.db"}))
    assert main(["serve", "--config", str(f), "--print-config"]) == 0
    first = yaml.safe_load(capsys.readouterr().out)
    assert (first["port"], first["limit"], first["no_reattribute"], first["request_timeout"]) == (9000, ["max_passages=50"],
                                                                                                True, 12.5)
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(first))
    assert main(["serve", "--config", str(again), "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == first  # the printed config is itself the same config
    monkeypatch.setenv("CITEBOUND_PORT", "9001")
    assert main(["serve", "--config", str(f), "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["port"] == 9001  # a variable overrides the file
    assert main(["serve", "--config", str(f), "--port", "9002", "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["port"] == 9002  # a flag overrides both


def test_print_config_redacts_credentials(tmp_path, capsys):
    assert main(["serve", "--upstream", "http://me:s3cret@h:1/v1?api_key=K9", "--print-config"]) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out and "K9" not in out and "http://***@h:1/v1?api_key=***" in out


@pytest.mark.parametrize("content,message", [
    ({"prot": 1}, "unknown key 'prot' (did you mean 'port'?)"),
    ({"port": "eighty"}, "key 'port': 'eighty' is not an integer"),
    ({"port": 80.5}, "key 'port': 80.5 is not an integer"),
    ({"no_reattribute": "yes"}, "key 'no_reattribute': 'yes' is not true or false"),
    ({"uncited": "sometimes"}, "key 'uncited': 'sometimes' is not one of ['flag', 'ignore']"),
    ({"limit": {"a": 1}}, "key 'limit'"),
    ({"admin_token": "x" * 20}, "key 'admin_token': secrets are read from files only; use admin_token_file"),
    ({"upstream": "http://u:p@h/v1"}, "key 'upstream': credentials in the URL"),
])
def test_a_bad_key_or_value_is_one_line_naming_the_file_and_key(tmp_path, capsys, content, message):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(content))
    assert main(["serve", "--config", str(f), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {f}: {message}" + err[len(f"error: {f}: {message}"):] and err.count("\n") == 1, err


@pytest.mark.parametrize("text,suffix,message", [("port: [1", ".yaml", "not valid YAML"), ("- 1\n", ".yaml", "a mapping"),
                                                 ("port = ", ".toml", "cannot be read")])
def test_a_file_that_is_not_a_config_is_one_line(tmp_path, capsys, text, suffix, message):
    f = tmp_path / f"c{suffix}"
    f.write_text(text)
    assert main(["serve", "--config", str(f), "--print-config"]) == 2
    assert message in capsys.readouterr().err


def test_toml_works_too(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text('verifier = "lexical"\nport = 8123\noverride = ["threshold=0.5"]\n')
    assert main(["serve", "--config", str(f), "--print-config"]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["port"] == 8123 and out["override"] == ["threshold=0.5"]


def test_the_deploy_page_lists_every_key_as_the_schema_has_it():
    from pathlib import Path

    from citebound.cli.config_file import table

    page = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text()
    assert table(_serve_parser()) in page


@pytest.mark.parametrize("value,want", [("1", True), ("true", True), ("TRUE", True), ("0", False), ("false", False)])
def test_a_boolean_from_the_environment(monkeypatch, capsys, value, want):
    monkeypatch.setenv("CITEBOUND_NO_REATTRIBUTE", value)
    assert main(["serve", "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["no_reattribute"] is want


@pytest.mark.parametrize("name,use", [("CITEBOUND_ADMIN_TOKEN", "admin_token_file"),
                                      ("CITEBOUND_UPSTREAM_KEY", "upstream_key_file"),
                                      ("CITEBOUND_STATE_PASSWORD", "state_password_file")])
def test_a_secret_in_a_variable_is_refused_naming_the_file_key_to_use(monkeypatch, capsys, name, use):
    """A secret set inline in a CITEBOUND_* variable would otherwise be ignored without a word (it names no flag)."""
    monkeypatch.setenv(name, "x" * 24)
    assert main(["serve", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert f"environment: key '{name[len('CITEBOUND_'):].lower()}': secrets are read from files only; use {use}" in err
    assert "x" * 24 not in err


@pytest.mark.parametrize("content,key,want", [
    ({"limit": "max_passages=50"}, "limit", ["max_passages=50"]),  # one string is a list of one
    ({"limit": ["max_passages=50", 7]}, "limit", ["max_passages=50", "7"]),
    ({"port": 8123.0}, "port", 8123),  # a whole float is that integer
    ({"request_timeout": 3}, "request_timeout", 3.0),
    ({"state": None}, "state", None),  # null: unset, the flag's own default
])
def test_values_beside_each_refusal_are_taken_as_the_flag_would(tmp_path, capsys, content, key, want):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"verifier": "lexical"} | content))
    assert main(["serve", "--config", str(f), "--print-config"]) == 0, capsys.readouterr().err
    assert yaml.safe_load(capsys.readouterr().out)[key] == want


@pytest.mark.parametrize("content,message", [
    ({"limit": [True]}, "key 'limit': [True] is not a list"),
    ({"limit": [["a"]]}, "key 'limit': [['a']] is not a list"),
    ({"port": True}, "key 'port': True is not an integer"),
    ({"port": [80]}, "key 'port': [80] is not an integer"),
    ({"request_timeout": None}, "key 'request_timeout': None is not a number"),
    # one bad item among good ones; a boolean, a list or a mapping where a string or a number goes
    ({"limit": ["max_passages=50", True]}, "key 'limit': ['max_passages=50', True] is not a list"),
    ({"host": ["a"]}, "key 'host': ['a'] is not a string"),
    ({"host": True}, "key 'host': True is not a string"),
    ({"host": {"a": 1}}, "key 'host': {'a': 1} is not a string"),
    ({"request_timeout": True}, "key 'request_timeout': True is not a number"),
])
def test_values_of_the_wrong_shape_are_refused(tmp_path, capsys, content, message):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(content))
    assert main(["serve", "--config", str(f), "--print-config"]) == 2
    assert f"error: {f}: {message}" in capsys.readouterr().err


def test_a_missing_an_empty_and_an_unreadable_config(tmp_path, capsys):
    assert main(["serve", "--config", str(tmp_path / "none.yaml"), "--print-config"]) == 2
    assert f"--config {tmp_path / 'none.yaml'}: no such file" in capsys.readouterr().err
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["serve", "--config", str(empty), "--verifier", "lexical", "--print-config"]) == 0  # nothing set
    capsys.readouterr()
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"verifier: caf\xe9\n")
    assert main(["serve", "--config", str(latin), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert f"--config {latin}: cannot be read as UTF-8 text (byte 13); save it as UTF-8" in err and err.count("\n") == 1


def test_a_key_may_be_written_with_dashes_and_an_at_sign_in_a_path_is_no_credential(tmp_path, capsys):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"request-timeout": 12.5, "upstream": "http://h:1/v1/models/@latest"}))
    assert main(["serve", "--config", str(f), "--print-config"]) == 0, capsys.readouterr().err
    out = yaml.safe_load(capsys.readouterr().out)
    assert (out["request_timeout"], out["upstream"]) == (12.5, "http://h:1/v1/models/@latest")


@pytest.mark.parametrize("argv", [["--port", "9002"], ["--port=9002"]])
def test_a_flag_typed_in_either_form_wins_over_the_file(tmp_path, capsys, argv):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"port": 9000}))
    assert main(["serve", "--config", str(f), *argv, "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["port"] == 9002


def test_print_config_is_one_key_per_line_in_sorted_order(tmp_path, capsys):
    """What an operator reads and diffs: block style (a list one item per line), keys sorted."""
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"verifier": "lexical", "port": 9000, "limit": ["max_passages=50"]}))
    assert main(["serve", "--config", str(f), "--print-config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = [line.split(":")[0] for line in lines if not line.startswith(("-", " "))]
    assert keys == sorted(keys) and len(keys) > 20
    assert "port: 9000" in lines and lines[lines.index("limit:") + 1] == "- max_passages=50"
