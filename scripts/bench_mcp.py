"""Benchmark the MCP server's ``memory`` tool round trip against ``memfs tool``'s.

The baseline is ``memfs tool --root DIR`` reading one JSON command per line and
answering one line each, over a pipe. Against it: ``memfs mcp --root DIR`` driven by
the ``mcp`` SDK's own client, over stdio and over streamable HTTP on loopback. All
three are separate processes on the same directory, alternated round by round (tool,
stdio, http, http, stdio, tool, ...) so drift in the machine's load hits them alike.
Each round sends ``--ops`` commands, alternating a ``view`` of a small file and a
``str_replace`` that toggles one word, each timed from send to answer. Reported: the
median round trip of each door per command, and each MCP door's ratio to the baseline
(above 1.0: slower than ``memfs tool``).

    .venv/bin/python scripts/bench_mcp.py [--ops 400] [--rounds 3] [--dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

MEMFS = str(Path(sys.executable).with_name("memfs"))
SERVING = re.compile(r"memfs mcp: serving .* at (http://\S+)")
FILE = "/memories/bench.md"
CONTENT = "".join(f"line {i} of the benchmark file\n" for i in range(40)) + "toggle: ping\n"


def commands(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i % 2 == 0:
            out.append({"command": "view", "path": FILE})
        else:
            old, new = ("ping", "pong") if i % 4 == 1 else ("pong", "ping")
            out.append({"command": "str_replace", "path": FILE, "old_str": old, "new_str": new})
    return out


def time_tool(root: Path, cmds: list[dict[str, Any]]) -> list[float]:
    proc = subprocess.Popen(
        [MEMFS, "tool", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None
    times = []
    try:
        for cmd in cmds:
            start = time.perf_counter()
            proc.stdin.write(json.dumps(cmd) + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            times.append(time.perf_counter() - start)
            if answer["is_error"]:
                raise SystemExit(f"memfs tool failed: {answer['content']}")
    finally:
        proc.stdin.close()
        proc.wait(30)
    return times


async def _time_client(client: Client, cmds: list[dict[str, Any]]) -> list[float]:
    times = []
    for cmd in cmds:
        start = time.perf_counter()
        result = await client.call_tool("memory", cmd)
        times.append(time.perf_counter() - start)
        if result.is_error:
            raise SystemExit(f"memfs mcp failed: {result.content}")
    return times


def time_stdio(root: Path, cmds: list[dict[str, Any]]) -> list[float]:
    async def run() -> list[float]:
        params = StdioServerParameters(command=MEMFS, args=["mcp", "--root", str(root)])
        info = types.Implementation(name="bench", version="1")
        with open(os.devnull, "w") as quiet:  # the server's "serving ..." line
            transport = stdio_client(params, errlog=quiet)
            async with Client(transport, mode="legacy", client_info=info, cache=None) as client:
                return await _time_client(client, cmds)

    return anyio.run(run)


@contextlib.contextmanager
def http_server(root: Path) -> Any:
    proc = subprocess.Popen(
        [MEMFS, "mcp", "--root", str(root), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = SERVING.search(line)
            if match:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(30) or not found:
            raise SystemExit("memfs mcp --http did not start")
        yield found[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def time_http(root: Path, cmds: list[dict[str, Any]]) -> list[float]:
    with http_server(root) as url:

        @contextlib.asynccontextmanager
        async def connect() -> AsyncIterator[Client]:
            async with httpx2.AsyncClient(timeout=30) as http:
                info = types.Implementation(name="bench", version="1")
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode="legacy", client_info=info, cache=None) as c:
                    yield c

        async def run() -> list[float]:
            async with connect() as client:
                return await _time_client(client, cmds)

        return anyio.run(run)


DOORS = {"tool": time_tool, "mcp_stdio": time_stdio, "mcp_http": time_http}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=400, help="commands per round per door")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where to make the memory directory")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    cmds = commands(args.ops)
    samples: dict[str, dict[str, list[float]]] = {d: {"view": [], "str_replace": []} for d in DOORS}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp) / "memories"
        root.mkdir()
        (root / "bench.md").write_text(CONTENT)
        order = list(DOORS)
        for round_ in range(args.rounds):
            for door in order if round_ % 2 == 0 else reversed(order):
                times = DOORS[door](root, cmds)
                # The first commands of a fresh process warm it up; they are not the
                # steady round trip this measures.
                for cmd, seconds in list(zip(cmds, times, strict=True))[10:]:
                    samples[door][cmd["command"]].append(seconds)
    result: dict[str, Any] = {"ops_per_round": args.ops, "rounds": args.rounds, "median_us": {}}
    for door, kinds in samples.items():
        result["median_us"][door] = {k: statistics.median(v) * 1e6 for k, v in kinds.items()}
    base = result["median_us"]["tool"]
    result["ratio_to_tool"] = {
        door: {k: result["median_us"][door][k] / base[k] for k in base}
        for door in ("mcp_stdio", "mcp_http")
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.rounds} rounds x {args.ops} commands per door (median round trip, µs)")
    print(f"{'door':<12}{'view':>12}{'str_replace':>14}{'view/tool':>12}{'edit/tool':>12}")
    for door, med in result["median_us"].items():
        ratio = result["ratio_to_tool"].get(door, {"view": 1.0, "str_replace": 1.0})
        print(
            f"{door:<12}{med['view']:>12.0f}{med['str_replace']:>14.0f}"
            f"{ratio['view']:>11.2f}x{ratio['str_replace']:>11.2f}x"
        )


if __name__ == "__main__":
    main()
