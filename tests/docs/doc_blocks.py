"""Reading the docs' fenced blocks and the doc-test markers in front of them.

A block may be preceded (on one of the three lines before its opening fence) by a marker:

- ``<!-- doc-test: example NAME [partial] [workspace=PATH] -->``: the block shows events of a
  real session whose input is the fixture directory ``docs/examples/NAME`` (``input.ndjson``
  with replay directives, ``args``, ``workspace/``). The test replays it and compares: every
  non-progress event must appear in the block in the daemon's order (``partial``: the block
  may leave events out), and each tool's progress text must be what the tool printed.
  ``workspace=PATH``: the block shows the workspace as PATH. ``...`` in a block line stands
  for any text; timings, pids and byte counts of progress are not compared.
- ``<!-- doc-test: run -->``: a ``python`` block that runs as pasted.
- ``<!-- doc-test: skip REASON -->``: a block that cannot run as it is (a signature, a
  fragment of a larger program); the reason is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    body: str
    marker: str | None  # example / run / skip
    args: str  # the rest of the marker

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"

    def json_lines(self) -> list[str]:
        return [line for line in self.body.splitlines() if line.startswith('{"type":')]


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    out: list[Block] = _tables(path, text)
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].splitlines()[-3:]
        marker = None
        args = ""
        for candidate in reversed(before):
            found = _MARKER.search(candidate)
            if found:
                marker, args = found.group(1), found.group(2)
                break
        out.append(Block(path, line, match.group(1), match.group(2), marker, args))
    return out


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in blocks(path)]


def _tables(path: Path, text: str) -> list[Block]:
    """A marker followed by a table: the table's quoted JSON messages are the block's lines."""
    lines = text.splitlines()
    out: list[Block] = []
    for n, line in enumerate(lines):
        found = _MARKER.search(line)
        if not found or n + 1 >= len(lines) or not lines[n + 1].startswith("|"):
            continue
        end = n + 1
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        body = "\n".join(
            m.group(1) for row in lines[n + 1 : end] for m in _INLINE_JSON.finditer(row)
        )
        out.append(Block(path, n + 2, "table", body + "\n", found.group(1), found.group(2)))
    return out


# A JSON event or command inside backticks in prose or a table cell.
_INLINE_JSON = re.compile(r"`+ ?(\{\"type\":.*?\}) ?`+")


def inline_json(path: Path) -> list[tuple[str, str]]:
    """(where, line) for JSON messages quoted in the text outside fenced blocks."""
    text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
    found: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        for match in _INLINE_JSON.finditer(line):
            found.append((f"{path.relative_to(REPO_ROOT)}:{n}", match.group(1)))
    return found
