"""citebound mcp: the guard as a Model Context Protocol server on stdio, for agent hosts.

Needs the [mcp] extra (the official ``mcp`` SDK). Tools: ``guard_answer`` (answer + passages -> guarded
answer and report) and ``verify_citation`` (claim + passage -> score, verdict, evidence window). The
guard is the one ``citebound guard`` builds from the same options; stdout is the protocol's, so logs go
to stderr.

An MCP host's configuration, with the absolute path of this install's citebound (a host does not see a
venv's PATH)::

    citebound mcp --print-config claude     # Claude Desktop's claude_desktop_config.json
    citebound mcp --print-config cursor     # Cursor's .cursor/mcp.json
    citebound mcp --print-config vscode     # VS Code's .vscode/mcp.json ("servers")
"""
from __future__ import annotations

import argparse
from typing import Any

from citebound.cli.common import (
    CLIError,
    add_command,
    add_limit_arg,
    add_policy_args,
    add_verifier_args,
)

HOSTS = ("claude", "cursor", "vscode")


def host_config(host: str, args: list[str]) -> dict[str, Any]:
    """The JSON a host reads: Claude Desktop and Cursor key servers by "mcpServers", VS Code by "servers"
    with a "type"."""
    import shutil
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "citebound"  # this interpreter's own, even outside PATH
    command = str(exe) if exe.exists() else (shutil.which("citebound") or "citebound")
    server: dict[str, Any] = {"command": command, "args": ["mcp", *args]}
    if host == "vscode":
        return {"servers": {"citebound": {"type": "stdio", **server}}}
    return {"mcpServers": {"citebound": server}}


def given_options(argv: list[str]) -> list[str]:
    """The mcp options of this command line, less --print-config and its value."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--print-config":
            skip = True
        elif not a.startswith("--print-config="):
            out.append(a)
    return out


def add_parser(sub: Any) -> None:
    m = add_command(sub, "mcp", __doc__, "the guard as an MCP server on stdio (needs the [mcp] extra)")
    m.add_argument("--print-config", choices=list(HOSTS), metavar="HOST",
                   help=f"print the host's MCP configuration for this server ({', '.join(HOSTS)}), with the absolute "
                        "path of this install's citebound and the options given here, then exit")
    m.add_argument("--calibration", metavar="JSON",
                   help="calibration from 'citebound calibrate' (default: the verifier's shipped one; 'none': its "
                        "verdict)")
    m.add_argument("--reattributor", default="bm25", metavar="NAME", help="bm25 or verifier")
    m.add_argument("--no-reattribute", action="store_true", help="flag failed citations without looking further")
    add_policy_args(m)
    add_limit_arg(m)
    add_verifier_args(m)
    m.set_defaults(func=run)


def mcp_guard(args: argparse.Namespace):
    """The guard the MCP server serves, from its options (the guard command's shared ones)."""
    from citebound.cli.common import build_guard

    return build_guard(args)


def run(args: argparse.Namespace) -> int:
    if args.print_config:
        import json

        argv = list(getattr(args, "argv", []))
        rest = given_options(argv[argv.index("mcp") + 1:]) if "mcp" in argv else []
        print(json.dumps(host_config(args.print_config, rest), indent=2))
        return 0
    try:
        from citebound.serving.mcp_server import build_server, serve_stdio
    except ImportError as e:
        raise CLIError(f"citebound mcp needs the [mcp] extra (pip install 'citebound[mcp]'): {e}") from None
    guard = mcp_guard(args)
    try:
        serve_stdio(build_server(guard))
    except ImportError as e:
        raise CLIError(f"citebound mcp needs the [mcp] extra (pip install 'citebound[mcp]'): {e}") from None
    return 0
