"""The permission facts a tool carries, judged by the real gate (as a table).

MultiEdit and NotebookEdit are edits: Edit rules cover them, acceptEdits runs them, they are
confined to the workspace. LS reads: Read rules cover it, it runs in default mode inside the
workspace and asks outside. TodoWrite never asks, not even in plan mode, but a deny rule
still holds. WebFetch is matched by ``WebFetch(domain:HOST)`` on the URL's exact host and
asks otherwise, even though it is read-only for scheduling.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from permission_harness import Workspace, workspace


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    yield from workspace(tmp_path)


def _edit(path: str) -> dict[str, Any]:
    return {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]}


def _cell(path: str) -> dict[str, Any]:
    return {"notebook_path": path, "cell_id": "c", "new_source": "x"}


_TODOS = {"todos": [{"content": "t", "status": "pending", "activeForm": "t-ing"}]}
_PAGE = {"url": "https://docs.example.com/a", "prompt": "p"}
_DOCS = "WebFetch(domain:docs.example.com)"

CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    # tool, input, permissions, mode, expected decision
    ("MultiEdit", _edit("a.txt"), {}, "default", "ask"),
    ("MultiEdit", _edit("a.txt"), {}, "acceptEdits", "allow"),
    ("MultiEdit", _edit("a.txt"), {}, "plan", "deny"),
    ("MultiEdit", _edit("a.txt"), {"deny": ["Edit(a.txt)"]}, "bypassPermissions", "deny"),
    ("MultiEdit", _edit("a.txt"), {"allow": ["Edit(a.txt)"]}, "default", "allow"),
    ("MultiEdit", _edit("{out}/x.txt"), {}, "acceptEdits", "ask"),
    ("NotebookEdit", _cell("n.ipynb"), {}, "default", "ask"),
    ("NotebookEdit", _cell("n.ipynb"), {}, "acceptEdits", "allow"),
    ("NotebookEdit", _cell("n.ipynb"), {"deny": ["Edit(*.ipynb)"]}, "acceptEdits", "deny"),
    ("NotebookEdit", _cell("{out}/n.ipynb"), {}, "bypassPermissions", "deny"),
    ("LS", {"path": "{ws}"}, {}, "default", "allow"),
    ("LS", {"path": "{ws}"}, {}, "plan", "allow"),
    ("LS", {"path": "{out}"}, {}, "default", "ask"),
    ("LS", {"path": "{ws}"}, {"deny": ["Read(/{ws})"]}, "default", "deny"),
    ("LS", {"path": "{out}"}, {"allow": ["Read(/{out})"]}, "default", "allow"),
    ("TodoWrite", _TODOS, {}, "default", "allow"),
    ("TodoWrite", _TODOS, {}, "plan", "allow"),
    ("TodoWrite", _TODOS, {}, "dontAsk", "allow"),
    ("TodoWrite", _TODOS, {"deny": ["TodoWrite"]}, "bypassPermissions", "deny"),
    ("WebFetch", _PAGE, {}, "default", "ask"),
    ("WebFetch", _PAGE, {}, "dontAsk", "deny"),
    ("WebFetch", _PAGE, {}, "bypassPermissions", "allow"),
    ("WebFetch", _PAGE, {"allow": [_DOCS]}, "default", "allow"),
    ("WebFetch", _PAGE, {"allow": ["WebFetch(domain:example.com)"]}, "default", "ask"),
    ("WebFetch", _PAGE, {"allow": ["WebFetch(domain:*)"]}, "default", "ask"),
    ("WebFetch", _PAGE, {"allow": ["WebFetch"]}, "default", "allow"),
    ("WebFetch", _PAGE, {"deny": [_DOCS]}, "bypassPermissions", "deny"),
    ("WebFetch", _PAGE, {"deny": ["WebFetch(domain:other.org)"]}, "bypassPermissions", "allow"),
    ("WebFetch", _PAGE, {"ask": [_DOCS]}, "bypassPermissions", "ask"),
]


@pytest.mark.parametrize(
    ("tool", "tool_input", "permissions", "mode", "expect"),
    CASES,
    ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)],
)
def test_tool_facts_decide_with_rules_and_modes(
    space: Workspace,
    tool: str,
    tool_input: dict[str, Any],
    permissions: dict[str, Any],
    mode: str,
    expect: str,
) -> None:
    paths = {"ws": str(space.ws), "out": str(space.outside)}

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.format(**paths)
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    gate = space.gate({"permissions": fill(permissions)}, mode=mode)
    decision = space.decide(gate, tool, fill(tool_input))
    assert decision.kind == expect, decision
