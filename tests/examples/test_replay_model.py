"""examples/replay_model.py: a recorded streaming response served on loopback, consumed by
the official anthropic SDK; tools start before the model's message ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_recording_is_split_into_timed_sse_events() -> None:
    sys.path.insert(0, str(REPO_ROOT / "examples"))
    try:
        from replay_model import sse_events
    finally:
        sys.path.remove(str(REPO_ROOT / "examples"))
    events = list(sse_events(REPO_ROOT / "examples" / "model_stream.sse"))
    kinds = [data.split(b"\n", 1)[0] for _, data in events]
    assert kinds[0] == b"event: message_start" and kinds[-1] == b"event: message_stop"
    assert kinds.count(b"event: content_block_start") == 4  # text + three tool_use blocks
    assert all(data.endswith(b"\n\n") and b": sleep" not in data for _, data in events)
    assert sum(pause for pause, _ in events) > 2  # a stream that takes its time


def test_tools_start_before_the_model_message_ends(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    timings = tmp_path / "timings.json"
    out = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "examples" / "replay_model.py"),
            *("--speed", "2", "--json", str(timings)),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads(timings.read_text())
    moments = summary["moments"]
    ids = summary["tool_use_ids"]
    assert len(ids) == 3
    stop = moments["message_stop"]
    for tool_id in ids:
        # Sent the moment its block stopped, started at once, before the message ended.
        assert moments[f"added {tool_id}"] <= moments[f"started {tool_id}"] < stop
    assert summary["started_early"] == ids
    assert "3 of 3 tools started" in out.stdout
