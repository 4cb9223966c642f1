"""`citebound mcp --print-config HOST`: the JSON each host reads, keyed as that host expects, with this install's
citebound and exactly the options given on the command line (not --print-config, not its value, not "mcp" twice)."""
import json
import sys
from pathlib import Path

import pytest

from citebound.cli.main import main
from citebound.cli.mcp import given_options


def test_given_options_drop_print_config_and_its_value():
    argv = ["--verifier", "lexical", "--print-config", "claude", "--no-reattribute", "--print-config=cursor",
            "--limit", "max_passages=7"]
    assert given_options(argv) == ["--verifier", "lexical", "--no-reattribute", "--limit", "max_passages=7"]
    assert given_options([]) == []


@pytest.mark.parametrize("host", ["claude", "cursor", "vscode"])
def test_each_hosts_configuration(host, capsys):
    assert main(["mcp", "--verifier", "lexical", "--print-config", host, "--no-reattribute"]) == 0
    got = json.loads(capsys.readouterr().out)
    exe = Path(sys.executable).parent / "citebound"
    server = {"command": str(exe) if exe.exists() else got[next(iter(got))]["citebound"]["command"],
              "args": ["mcp", "--verifier", "lexical", "--no-reattribute"]}
    if host == "vscode":  # VS Code keys servers by "servers" and needs the transport's type
        assert got == {"servers": {"citebound": {"type": "stdio", **server}}}
    else:
        assert got == {"mcpServers": {"citebound": server}}
