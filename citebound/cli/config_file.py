"""One config file for ``citebound serve``: every flag is a key, ``CITEBOUND_*`` variables override keys, and
flags typed on the command line override both.

The schema is the command's own parser: a key is a flag's name with ``_`` for ``-`` (``request_timeout`` for
``--request-timeout``), of the flag's type and choices; a repeatable flag (``--override``, ``--limit``) takes a
list; a switch (``--no-reattribute``) takes true or false. Secrets come only as file paths
(``admin_token_file``, ``state_password_file``); a key that would hold one inline is refused, as is an upstream
URL with credentials in it. YAML (``.yaml``/``.yml``) or TOML (``.toml``)::

    verifier: embedding
    port: 8000
    state: redis://redis:6379/0
    state_password_file: /run/secrets/redis_password
    admin_token_file: /run/secrets/admin_token
    limit: [max_passages=200]

``citebound serve --config FILE --print-config`` prints the effective configuration (secrets redacted) and
exits; what it prints is itself a valid config file.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from citebound.cli.common import CLIError

# keys that are not settings of the service (the parser's own, or this file's)
SKIP = {"help", "config", "print_config", "command", "func", "argv", "parser"}
INLINE_SECRETS = {"admin_token": "admin_token_file", "state_password": "state_password_file",
                  "redis_password": "state_password_file", "password": "state_password_file",
                  "api_key": "upstream_key_file", "upstream_key": "upstream_key_file"}
ENV_PREFIX = "CITEBOUND_"


def schema(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every settable key of a command: its flag's action, by dest."""
    return {a.dest: a for a in parser._actions if a.dest not in SKIP and a.option_strings}


def _kind(action: argparse.Action) -> str:
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return "bool"
    if isinstance(action, argparse._AppendAction):
        return "list"
    t = action.type
    return {int: "int", float: "float"}.get(t, "str")  # type: ignore[arg-type]


def _convert(key: str, value: Any, action: argparse.Action, where: str) -> Any:
    """A file's (or a variable's) value as the flag would have it; CLIError naming the key otherwise."""
    kind = _kind(action)
    allowed = f"one of {list(action.choices)}" if action.choices else {"bool": "true or false", "list": "a list",
                                                                       "int": "an integer", "float": "a number",
                                                                       "str": "a string"}[kind]
    bad = CLIError(f"{where}: key {key!r}: {value!r} is not {allowed}")
    if value is None and action.default is None:
        return None  # null: unset, as the flag's own default
    if kind == "bool":
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):  # from a variable
            value = value.lower() in ("true", "1")
        if not isinstance(value, bool):
            raise bad
        return value
    if kind == "list":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                                  for x in value):
            raise bad
        return [str(x) for x in value]
    if isinstance(value, bool) or isinstance(value, (list, dict)) or value is None:
        raise bad
    try:
        out = int(value) if kind == "int" else float(value) if kind == "float" else str(value)
    except (TypeError, ValueError):
        raise bad from None
    if kind == "int" and isinstance(value, float) and value != int(value):
        raise bad
    if action.choices and out not in action.choices:
        raise bad
    return out


def read_file(path: str) -> dict[str, Any]:
    """The mapping a YAML or TOML file holds; CLIError naming the file otherwise."""
    p = Path(path)
    try:
        if not p.is_file():
            raise CLIError(f"--config {path}: no such file")
        text = p.read_text(encoding="utf-8")
    except OSError as e:  # a folder this user cannot enter, a file it cannot read
        raise CLIError(f"--config {path}: cannot read ({e.strerror or e}); it must be readable by uid {os.getuid()}") from None
    except UnicodeDecodeError as e:
        raise CLIError(f"--config {path}: cannot be read as UTF-8 text (byte {e.start}); save it as UTF-8") from None
    try:
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CLIError(f"--config {path}: cannot be read ({str(e).splitlines()[0][:200]})") from None
    except Exception as e:  # yaml's errors (the yaml module is imported above only)
        raise CLIError(f"--config {path}: not valid YAML ({str(e).splitlines()[0][:200]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CLIError(f"--config {path}: expected a mapping of keys to values, got a {type(data).__name__}")
    return data


def _nearest(key: str, keys: list[str]) -> str:
    import difflib

    near = difflib.get_close_matches(key, keys, n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def apply(args: argparse.Namespace, parser: argparse.ArgumentParser, env: dict[str, str] | None = None) -> list[str]:
    """Fill ``args`` from ``--config`` and ``CITEBOUND_*`` variables where the command line left a flag at its
    default; returns where each key came from ("key: file|env"). CLIError naming the file and key for an
    unknown key, a wrong type or value, or a secret given inline."""
    env = dict(os.environ if env is None else env)
    keys = schema(parser)
    given = set(getattr(args, "argv", []) or [])
    typed = {dest for dest, a in keys.items() if any(o in given or any(g.startswith(o + "=") for g in given)
                                                      for o in a.option_strings)}
    layers: list[tuple[str, dict[str, Any]]] = []
    if getattr(args, "config", None):
        layers.append((args.config, read_file(args.config)))
    from_env = {k[len(ENV_PREFIX):].lower(): v for k, v in env.items() if k.startswith(ENV_PREFIX)
                and (k[len(ENV_PREFIX):].lower() in keys or k[len(ENV_PREFIX):].lower() in INLINE_SECRETS)}
    layers.append(("environment", from_env))
    origin: list[str] = []
    for where, data in layers:
        for key, value in data.items():
            key = str(key).replace("-", "_")
            if key in INLINE_SECRETS:
                raise CLIError(f"{where}: key {key!r}: secrets are read from files only; use {INLINE_SECRETS[key]}")
            if key not in keys:
                raise CLIError(f"{where}: unknown key {key!r}{_nearest(key, list(keys))}; the keys are the serve "
                               "flags (citebound serve --help), with _ for -")
            value = _convert(key, value, keys[key], where)
            if key == "upstream" and "@" in urlsplit(str(value)).netloc:
                raise CLIError(f"{where}: key 'upstream': credentials in the URL; give the proxy's own key as a file "
                               "(upstream_key_file), or let it forward the client's Authorization header")
            if key in typed:
                continue  # the command line wins
            setattr(args, key, value)
            origin.append(f"{key}: {'env ' + ENV_PREFIX + key.upper() if where == 'environment' else where}")
    return origin


def effective(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Every key with the value in force, secrets redacted (file paths are shown: they are not secrets)."""
    from citebound.scoring.llm_backends import redact_url

    out: dict[str, Any] = {}
    for key in schema(parser):
        value = getattr(args, key, None)
        out[key] = redact_url(value) if isinstance(value, str) else value
    return out


def print_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    import yaml

    return yaml.safe_dump(effective(args, parser), sort_keys=True, default_flow_style=False)


def table(parser: argparse.ArgumentParser) -> str:
    """The docs' table of every key (from the schema): key, type, default, what it does."""
    rows = ["| key | type | default | what it sets |", "|---|---|---|---|"]
    for key, a in sorted(schema(parser).items()):
        kind = _kind(a) + (f" ({', '.join(map(str, a.choices))})" if a.choices else "")
        default = "" if a.default in (None, argparse.SUPPRESS) else f"`{a.default}`"
        text = " ".join(str(a.help or "").replace("|", "\\|").split())
        rows.append(f"| `{key}` | {kind} | {default} | {text} |")
    return "\n".join(rows) + "\n"
