"""The docs' examples are checked against the program, so they cannot drift from it.

- Every JSON message the docs show (in blocks and inline) is a message the daemon can write or
  read: it decodes as its type, and an event shows exactly the fields the daemon writes.
- Every session block marked ``example`` is replayed from ``docs/examples/NAME`` and compared
  with what the daemon writes now (doc_blocks.py says how).
- Every ``python`` block runs as pasted, unless marked ``skip`` with a reason.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from doc_blocks import REPO_ROOT, Block, all_blocks, inline_json

from stdio_executor.fixtures.compare import Normalizer
from stdio_executor.fixtures.fixture import Fixture, parse_input
from stdio_executor.fixtures.replay import daemon_env, run_fixture
from stdio_executor.protocol import decode_event
from stdio_executor.protocol.messages import Command, Event

EXAMPLES = REPO_ROOT / "docs" / "examples"
BLOCKS = all_blocks()


def _tags(union: Any) -> set[str]:
    return {m.__struct_config__.tag for m in union.__args__}


EVENT_TAGS = _tags(Event)
COMMAND_TAGS = _tags(Command)
# Objects with a `type` that are not wire messages: JSON Schema types, API content blocks.
NOT_MESSAGES = {"object", "string", "array", "number", "integer", "boolean", "null"} | {
    "tool_use",
    "tool_result",
    "text",
    "image",
}
NOT_MESSAGES -= EVENT_TAGS
_command_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Command)


def _messages() -> list[tuple[str, str]]:
    found = [(b.where, line) for b in BLOCKS for line in b.json_lines()]
    for path in sorted((REPO_ROOT / "docs").glob("*.md")):
        found += inline_json(path)
    return found


def _keys(value: Any, path: str = "") -> set[str]:
    """Dotted key paths of the objects a message holds at fixed places (not free-form data)."""
    if not isinstance(value, dict):
        return set()
    out = set()
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        out.add(where)
        if key in ("meta", "limits", "sandbox", "trust"):
            out |= _keys(item, where)
    return out


@pytest.mark.parametrize(("where", "line"), _messages(), ids=lambda v: str(v)[:60])
def test_every_message_the_docs_show_is_one_the_daemon_knows(where: str, line: str) -> None:
    tag = re.match(r'\{"type":"(\w+)"', line)
    assert tag, f"{where}: no type tag in {line[:80]}"
    kind = tag.group(1)
    if kind in NOT_MESSAGES:
        return
    assert kind in EVENT_TAGS | COMMAND_TAGS, f"{where}: unknown message type {kind!r}"
    if "..." in line:
        return  # an elided line: only its type can be checked
    if kind in COMMAND_TAGS and kind not in EVENT_TAGS:
        _command_decoder.decode(line)
        return
    event = decode_event(line)
    written = json.loads(msgspec.json.encode(event))
    shown = json.loads(line)
    assert _keys(shown) == _keys(written), (
        f"{where}: the docs show fields {sorted(_keys(shown) ^ _keys(written))} differently "
        f"from the {kind} event the daemon writes"
    )


# ----------------------------------------------------------------- session examples

_NUMBERS = re.compile(r'"(duration_ms|elapsed_ms|total_bytes|pid)":\d+(\.\d+)?')


def _example_blocks() -> list[Block]:
    return [b for b in BLOCKS if b.marker == "example"]


def _pattern(line: str) -> re.Pattern[str]:
    """A doc line with ``...`` as a wildcard, numbers that vary by run as any number."""
    line = _NUMBERS.sub(lambda m: f'"{m.group(1)}":0', line)
    parts = [re.escape(p) for p in line.split("...")]
    return re.compile(".*?".join(parts).replace(re.escape('":0'), '":[0-9.]+'), re.DOTALL)


def _example(path: Path) -> Fixture:
    """A fixture directory without expected.ndjson: the doc block is what is expected."""
    steps = parse_input((path / "input.ndjson").read_bytes(), str(path / "input.ndjson"))
    args_file = path / "args"
    args = shlex.split(args_file.read_text(), comments=True) if args_file.is_file() else []
    workspace = path / "workspace"
    return Fixture(path, steps, [], args, workspace if workspace.is_dir() else None)


def _actual_line(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def _normalized(event: dict[str, Any], norm: Normalizer) -> dict[str, Any]:
    """Paths, pids and timings made stable; unlike a fixture's normalization, error messages
    are kept whole (the docs quote them)."""
    out: dict[str, Any] = norm.value(event)
    meta = out.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("duration_ms"), int | float):
        meta["duration_ms"] = "<ms>"
    return out


def _progress_text(events: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for event in events:
        data = event.get("data")
        if event.get("type") == "progress" and isinstance(data, dict) and "text" in data:
            out[event["tool_use_id"]] = out.get(event["tool_use_id"], "") + str(data["text"])
    return out


@pytest.mark.parametrize("block", _example_blocks(), ids=lambda b: b.where)
def test_each_session_example_is_what_the_daemon_writes(block: Block) -> None:
    words = block.args.split()
    name = words[0]
    partial = "partial" in words
    workspace = next((w.split("=", 1)[1] for w in words if w.startswith("workspace=")), None)
    result = run_fixture(_example(EXAMPLES / name), keep=True)
    assert result.scratch is not None
    shutil.rmtree(result.scratch, ignore_errors=True)
    # The report compares with an empty expected.ndjson, so only problems of the run count.
    broken = [r for r in result.report if r.startswith(("the daemon", "step ", "stdout line"))]
    assert not broken, f"{block.where}: replaying docs/examples/{name}: {broken}"
    scratch = Normalizer()
    scratch.add_path(str(result.scratch / "workspace"), "<workspace>")
    scratch.add_path(str(result.scratch / "spill"), "<spill>")
    scratch.add_path(str(result.scratch), "<tmp>")
    doc_norm = Normalizer()
    if workspace:
        doc_norm.paths[workspace] = "<workspace>"
    actual = [
        _normalized(e, scratch) for e in result.raw if e.get("type") not in ("progress", "ready")
    ]
    doc_lines = [line for line in block.json_lines() if not line.startswith('{"type":"ready"')]

    # Progress: each tool's text, however it was cut into events.
    doc_events = [
        json.loads(line) for line in doc_lines if '"type":"progress"' in line and "..." not in line
    ]
    shown_progress = _progress_text(doc_events)
    actual_progress = _progress_text(result.raw)
    for tool_id, text in shown_progress.items():
        assert actual_progress.get(tool_id) == text, (
            f"{block.where}: progress of {tool_id}: shown {text!r}, "
            f"written {actual_progress.get(tool_id)!r}"
        )

    # Every other event in order; with `partial`, the block may leave some out. A table's
    # rows are in the table's own order.
    shown = [line for line in doc_lines if '"type":"progress"' not in line]
    if block.lang == "table":
        for line in shown:
            want = None if "..." in line else _normalized(json.loads(line), doc_norm)
            pattern = _pattern(line)
            assert any(
                want == got if want is not None else pattern.fullmatch(_actual_line(got))
                for got in actual
            ), f"{block.where}: the daemon did not write\n  {line}\nactual events:\n  " + (
                "\n  ".join(_actual_line(e) for e in actual)
            )
        return
    at = 0
    for line in shown:
        want = None if "..." in line else _normalized(json.loads(line), doc_norm)
        pattern = _pattern(line)
        while at < len(actual):
            got = actual[at]
            at += 1
            if want is not None and want == got:
                break
            if want is None and pattern.fullmatch(_actual_line(got)):
                break
            assert partial, (
                f"{block.where}: the daemon wrote\n  {_actual_line(got)}\nwhere the docs show\n"
                f"  {line}\nactual events:\n  " + "\n  ".join(_actual_line(e) for e in actual)
            )
        else:
            pytest.fail(
                f"{block.where}: the docs show\n  {line}\nwhich the daemon did not write "
                "(in this order); actual events:\n  " + "\n  ".join(_actual_line(e) for e in actual)
            )
    if not partial:
        rest = actual[at:]
        assert not rest, f"{block.where}: the docs leave out {[_actual_line(e) for e in rest]}"


def test_every_example_directory_is_shown_somewhere() -> None:
    used = {b.args.split()[0] for b in _example_blocks()}
    present = {p.name for p in EXAMPLES.iterdir() if p.is_dir()}
    assert present <= used, f"docs/examples not used by any doc block: {sorted(present - used)}"


# ------------------------------------------------------------------- python blocks


def _python_blocks() -> list[Block]:
    return [b for b in BLOCKS if b.lang == "python"]


def test_every_python_block_runs_or_says_why_not() -> None:
    for block in _python_blocks():
        assert block.marker in ("run", "skip"), (
            f"{block.where}: mark the block <!-- doc-test: run --> (it runs as pasted) or "
            "<!-- doc-test: skip REASON -->"
        )
        if block.marker == "skip":
            assert block.args, f"{block.where}: a skipped block needs a reason"


@pytest.mark.parametrize(
    "block", [b for b in _python_blocks() if b.marker == "run"], ids=lambda b: b.where
)
def test_python_blocks_run_as_pasted(block: Block, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# a workspace\n")
    script = tmp_path / "snippet.py"
    script.write_text(block.body)
    env = daemon_env()
    env.pop("STDIO_EXECUTOR", None)
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"{block.where} failed:\n{out.stdout}\n{out.stderr}"


# --------------------------------------------------------------------- command line


def test_every_daemon_option_is_in_the_docs_command_line_table() -> None:
    """docs/protocol.md section 3 lists exactly the options `stdio-executor --help` has."""
    out = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "--help"],
        env=daemon_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    in_help = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", out.stdout))
    text = (REPO_ROOT / "docs" / "protocol.md").read_text()
    section = text.split("## 3. Command line", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `--")]
    in_docs = {re.match(r"\| `(--[a-z-]+)", row).group(1) for row in rows}  # type: ignore[union-attr]
    assert in_help - in_docs == set(), (
        f"options missing from docs/protocol.md 3: {in_help - in_docs}"
    )
    assert in_docs - in_help == set(), f"documented options the daemon lacks: {in_docs - in_help}"
