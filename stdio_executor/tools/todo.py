"""The TodoWrite tool: the model's task list, kept for the session and shown to the host.

Owns: accepting both item shapes Claude Code has used (``content``/``status`` with
``activeForm``, from 1.0.9x on; with ``id``/``priority`` before), replacing the session's
list whole, the ``todos`` event that carries the new list to the host, and Claude Code's
result text. As in Claude Code, a list whose tasks are all completed is forgotten, and the
tool is not concurrency-safe: two TodoWrite calls of one turn run one after the other, in
order, so the last one's list is the one that stays.
Must not: ask for permission (it changes nothing outside the session; deny rules still
apply) or refuse a list for its contents beyond the input schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..protocol.messages import TodoItem, Todos
from .base import InputError, Tool, ToolContext, ToolOutcome
from .inputs import UNSET, TodoWriteInput, parse
from .validation import Problems

__all__ = ["RESULT", "TodoWriteTool"]

RESULT = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to "
    "track your progress. Please proceed with the current tasks if applicable"
)


class _TodoCall(msgspec.Struct, frozen=True):
    todos: tuple[dict[str, Any], ...]


class TodoWriteTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> _TodoCall:
        value = parse(self.spec.name, TodoWriteInput, raw)
        # Either shape is whole: activeForm (1.0.9x on) or id (up to 1.0.8x).
        missing = [
            f"todos[{i}].activeForm"
            for i, item in enumerate(value.todos)
            if item.activeForm is UNSET and item.id is UNSET
        ]
        if missing:
            raise InputError(Problems(missing=missing).message(self.spec.name))
        items = tuple(
            {k: v for k, v in msgspec.structs.asdict(item).items() if v is not UNSET}
            for item in value.todos
        )
        return _TodoCall(items)

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _TodoCall = value
        previous = ctx.session.todos
        todos = list(call.todos)
        done = bool(todos) and all(t["status"] == "completed" for t in todos)
        ctx.session.todos = [] if done else todos
        ctx.notify(
            Todos(
                tool_use_id=ctx.tool_use_id,
                todos=[TodoItem(**t) for t in todos],
                previous=[TodoItem(**t) for t in previous],
            )
        )
        return ToolOutcome(RESULT)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        outcome = self.run_inline(value, ctx)
        assert outcome is not None
        return outcome
