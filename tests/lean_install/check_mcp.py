"""Run inside a venv with only the wheel's [mcp] extra: the official MCP SDK's client starts this venv's
`citebound mcp` over stdio (the command `citebound mcp --print-config` prints), lists the tools and guards the
shipped example; and neither the service (FastAPI) nor torch came with the extra. Exit status 1 names what
is wrong."""
import asyncio
import importlib.metadata as md
import json
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from citebound import examples


def main() -> None:
    for dist in ("fastapi", "prometheus-client", "torch", "transformers"):  # the SDK itself brings uvicorn
        try:
            md.version(dist)
            sys.exit(f"[mcp] brought {dist}")
        except md.PackageNotFoundError:
            pass
    cfg = json.loads(subprocess.run([str(Path(sys.executable).parent / "citebound"), "mcp", "--print-config", "claude",
                                     "--verifier", "lexical"], capture_output=True, text=True, check=True).stdout)
    server = cfg["mcpServers"]["citebound"]
    if not Path(server["command"]).is_absolute():
        sys.exit(f"--print-config gave a command that is not an absolute path: {server['command']}")
    example = json.loads(examples.path().read_text())

    async def run():
        params = StdioServerParameters(command=server["command"], args=server["args"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = sorted(t.name for t in (await session.list_tools()).tools)
            result = await session.call_tool("guard_answer", {"answer": example["answer"],
                                                              "passages": example["passages"]})
            return tools, result

    tools, result = asyncio.run(run())
    if tools != ["guard_answer", "verify_citation"] or result.is_error:
        sys.exit(f"tools {tools}; result {result.content}")
    body = json.loads(result.content[0].text)
    if body["counts"]["n_citations"] < 1 or not body["guarded_answer"]:
        sys.exit(f"unexpected result: {body}")
    print(f"[mcp] alone: the SDK client guarded the example through {server['command']} mcp: {body['counts']}")


if __name__ == "__main__":
    main()
