"""A minimal host that implements a tool of its own (standard library only).

It starts stdio-executor, declares a ``word_count`` tool with ``register_tool``, schedules a
call of it next to a Bash call (as a model's ``tool_use`` blocks would arrive), answers the
daemon's ``tool_call`` with a progress report and the output, and prints the ``tool_result``
blocks it would send back to the model.

    python examples/host_tool.py            # runs `python -m stdio_executor`
    STDIO_EXECUTOR="stdio-executor --log-level info" python examples/host_tool.py
    STDIO_EXECUTOR='["stdio-executor", "--log-level", "info"]' python examples/host_tool.py

``STDIO_EXECUTOR`` means what it means for every example and client (docs/protocol.md,
section 3): a JSON array of words, or shell words.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from typing import Any

WORD_COUNT = {
    "name": "word_count",
    "description": "Counts the words of a text.",
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to count"}},
        "required": ["text"],
    },
    "read_only": True,  # may run in parallel with other read-only tools
    "interrupt_behavior": "block",
    "timeout_ms": 30_000,
}


def daemon_command() -> list[str]:
    value = os.environ.get("STDIO_EXECUTOR", "").strip()
    if not value:
        return [sys.executable, "-m", "stdio_executor"]
    if value.startswith("["):
        words = json.loads(value)
        if not (isinstance(words, list) and words and all(isinstance(w, str) for w in words)):
            raise SystemExit("STDIO_EXECUTOR: a JSON array must hold the command's words")
        return words
    return shlex.split(value)


def main() -> int:
    command = daemon_command()
    daemon = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert daemon.stdin is not None and daemon.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert daemon.stdin is not None
        daemon.stdin.write(json.dumps(message) + "\n")
        daemon.stdin.flush()

    def events() -> Any:
        assert daemon.stdout is not None
        for line in daemon.stdout:
            yield json.loads(line)

    stream = events()
    ready = next(stream)
    assert ready["type"] == "ready" and ready["protocol_version"] == 1

    send({"type": "register_tool", "tool": WORD_COUNT, "request_id": "reg-1"})
    for event in stream:
        if event["type"] == "error":
            sys.exit(f"register_tool failed: {event['message']}")
        if event["type"] == "tools_changed" and event["request_id"] == "reg-1":
            print("registered:", event["added"])
            break

    # What a model's assistant message might hold: our tool and a built-in.
    send(
        {
            "type": "add_tool",
            "tool_use": {"id": "toolu_1", "name": "word_count", "input": {"text": "one two three"}},
        }
    )
    send(
        {
            "type": "add_tool",
            "tool_use": {"id": "toolu_2", "name": "Bash", "input": {"command": "echo hi"}},
        }
    )
    send({"type": "drain", "request_id": "drain-1"})

    results = []
    for event in stream:
        kind = event["type"]
        if kind == "tool_call" and event["name"] == "word_count":
            tool_use_id = event["tool_use_id"]
            send(
                {"type": "tool_progress", "tool_use_id": tool_use_id, "data": {"stage": "counting"}}
            )
            words = len(event["input"]["text"].split())
            send({"type": "tool_output", "tool_use_id": tool_use_id, "content": f"{words} words"})
        elif kind == "tool_cancel":
            print("cancelled:", event["tool_use_id"], event["reason"])
        elif kind == "tool_result":
            event.pop("meta")  # what remains is an API tool_result block
            results.append(event)
        elif kind == "error":
            print("error:", event["message"], file=sys.stderr)
        elif kind == "drained":
            break

    print(json.dumps({"role": "user", "content": results}))
    daemon.stdin.close()
    return daemon.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
