"""Glob walks a small tree inline and hands a large one to a worker thread, same answer."""

from __future__ import annotations

import pytest
from files_harness import Harness

from stdio_executor.tools.files.globbing import INLINE_MAX_ENTRIES

pytestmark = pytest.mark.anyio


async def test_glob_of_a_small_tree_is_answered_inline_as_run_answers_it(
    harness: Harness,
) -> None:
    for d in range(3):
        sub = harness.workspace / f"pkg{d}"
        sub.mkdir()
        for i in range(4):
            (sub / f"m{i}.py").write_text("")
    tool = harness.tool("Glob")
    value = tool.validate({"pattern": "**/*.py"})
    inline = tool.run_inline(value, harness.context())
    assert inline is not None
    assert inline == await harness.call("Glob", {"pattern": "**/*.py"}, inline=False)


async def test_glob_of_a_large_tree_hands_over_to_a_worker_thread(harness: Harness) -> None:
    for i in range(INLINE_MAX_ENTRIES + 10):
        (harness.workspace / f"f{i:04d}.txt").write_text("")
    tool = harness.tool("Glob")
    value = tool.validate({"pattern": "*.txt"})
    assert tool.run_inline(value, harness.context()) is None
    text = await harness.ok("Glob", {"pattern": "*.txt"})
    assert f"the 100 newest of {INLINE_MAX_ENTRIES + 10} matches" in text
