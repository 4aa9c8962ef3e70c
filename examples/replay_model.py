"""Play a model: tools start while the model is still streaming its message.

A small HTTP server on 127.0.0.1 replays a recorded Messages API streaming response
(``model_stream.sse``: text, then three ``tool_use`` blocks whose input arrives in
``input_json_delta`` pieces, with the recorded pauses). The official ``anthropic`` SDK
consumes it (``base_url`` pointed at the server, a dummy key), and each ``tool_use`` block is
sent to stdio-executor the moment its ``content_block_stop`` arrives, through the package's
Python client. The timestamps show tools starting, and finishing, before the message ends.

    pip install -e '.[examples]'
    python examples/replay_model.py

Nothing leaves the machine: the "model" is the local server.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from stdio_executor.client import Client
from stdio_executor.protocol import Event, Progress, ToolResult, ToolStarted

if TYPE_CHECKING:
    import anthropic

HERE = Path(__file__).resolve().parent
_SLEEP = re.compile(r"^: sleep ([0-9.]+)$")


def sse_events(path: Path) -> Iterator[tuple[float, bytes]]:
    """(pause before it, event bytes) for each event of a recorded SSE stream."""
    pause = 0.0
    for block in path.read_text("utf-8").split("\n\n"):
        lines = [line for line in block.splitlines() if line]
        for line in lines:
            match = _SLEEP.match(line)
            if match:
                pause += float(match.group(1))
        data = [line for line in lines if not line.startswith(":")]
        if data:
            yield pause, ("\n".join(data) + "\n\n").encode()
            pause = 0.0


def serve_recording(path: Path, speed: float = 1.0) -> ThreadingHTTPServer:
    """A Messages API stand-in on 127.0.0.1 (a free port) that replays ``path``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            self.rfile.read(length)  # the request: model, tools, messages (not needed)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("request-id", "req_replayed")
            self.end_headers()
            for pause, event in sse_events(path):
                time.sleep(pause / speed)
                self.wfile.write(event)
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep the demo's output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def make_workspace() -> Path:
    workspace = Path(tempfile.mkdtemp(prefix="replay-model-"))
    (workspace / "notes.md").write_text("# Notes\n\n- TODO: write the README\n- ship it\n")
    (workspace / "app.py").write_text("print('hello')  # TODO: tests\n")
    return workspace


async def run(stream_file: Path, speed: float, daemon_args: list[str]) -> dict[str, Any]:
    import anthropic  # a few seconds to import: only when a model is played

    t0 = time.monotonic()
    moments: dict[str, float] = {}

    def say(text: str) -> None:
        print(f"{time.monotonic() - t0:6.2f}s  {text}", flush=True)

    async def show(events: MemoryObjectReceiveStream[Event]) -> None:
        async for event in events:
            if isinstance(event, ToolStarted):
                moments.setdefault(f"started {event.tool_use_id}", time.monotonic() - t0)
                say(f"  executor: started {event.tool_use_id} ({event.name})")
            elif isinstance(event, Progress):
                text = str(event.data.get("text", "")).strip().replace("\n", " | ")
                say(f"  executor: progress {event.tool_use_id}: {text[:60]}")
            elif isinstance(event, ToolResult):
                moments.setdefault(f"result {event.tool_use_id}", time.monotonic() - t0)
                say(f"  executor: result {event.tool_use_id} ({event.meta.status})")

    server = serve_recording(stream_file, speed)
    workspace = make_workspace()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    say(f"model server replaying {stream_file.name} on {base_url}")
    try:
        async with Client([*daemon_args, "--workspace", str(workspace)]) as executor:
            model = anthropic.AsyncAnthropic(base_url=base_url, api_key="dummy", max_retries=0)
            async with executor.subscribe() as events, anyio.create_task_group() as tg:
                tg.start_soon(show, events)
                # The daemon's tools, as the `ready` line lists them, are API tool definitions.
                tools = cast("list[anthropic.types.ToolParam]", executor.api_tools())
                async with model.messages.stream(
                    model="claude-sonnet-4-5",
                    max_tokens=1024,
                    tools=tools,
                    messages=[{"role": "user", "content": "Look around the project."}],
                ) as stream:
                    async for event in stream:
                        if event.type == "content_block_start":
                            block = event.content_block
                            if block.type == "tool_use":
                                say(f"model: tool_use {block.id} ({block.name}) begins")
                        elif (
                            event.type == "content_block_stop"
                            and event.content_block.type == "tool_use"
                        ):
                            block = event.content_block
                            say(f"model: tool_use {block.id} complete -> add_tool {block.input}")
                            moments[f"added {block.id}"] = time.monotonic() - t0
                            await executor.add_tool(block)
                        elif event.type == "message_stop":
                            moments["message_stop"] = time.monotonic() - t0
                            say("model: message_stop")
                    message = await stream.get_final_message()
                text = "".join(b.text for b in message.content if b.type == "text")
                say(f"model said: {text!r} (stop_reason {message.stop_reason})")
                turn = await executor.drain()
                say(f"drained: {turn.drained.results} results, {turn.drained.errors} errors")
                tg.cancel_scope.cancel()
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(workspace, ignore_errors=True)
    reply = {"role": "user", "content": turn.content_blocks()}
    print("next user message:", json.dumps(reply)[:400], "...")
    stop = moments["message_stop"]
    ids = [b.tool_use_id for b in turn.results]
    early = [i for i in ids if moments.get(f"started {i}", stop) < stop]
    done_early = [i for i in ids if moments.get(f"result {i}", stop) < stop]
    print(
        f"{len(early)} of {len(ids)} tools started and {len(done_early)} finished before the "
        f"model's message ended (message_stop at {stop:.2f}s)"
    )
    return {"moments": moments, "tool_use_ids": ids, "started_early": early}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stream", type=Path, default=HERE / "model_stream.sse")
    p.add_argument("--speed", type=float, default=1.0, help="replay faster (2.0) or slower")
    p.add_argument("--json", type=Path, default=None, help="also write the timings here")
    p.add_argument("daemon_args", nargs="*", help="extra stdio-executor options")
    args = p.parse_args(argv)
    summary = anyio.run(run, args.stream, args.speed, args.daemon_args)
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0 if summary["started_early"] else 1


if __name__ == "__main__":
    sys.exit(main())
