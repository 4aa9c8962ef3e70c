"""The NotebookEdit tool: replace, insert or delete one cell of a Jupyter notebook.

Owns: finding a cell by its ``id`` or by ``cell-N`` (0-based index, as Claude Code accepts),
the three edit modes, keeping the file a valid nbformat 4 notebook (a new cell carries an id
exactly when the notebook's minor version (4.5+) has ids; a cell changed to markdown loses
the outputs only code cells may have, one changed to code gains them), Claude Code's result
and error wording, and the read-before-edit rule Claude Code applies to notebooks (the same
stamp as Edit's, renewed after writing).
Must not: run cells or touch outputs of cells it does not edit. The file is written with
``multiedit.atomic_write``: a failure leaves the old notebook whole.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping
from typing import Any

import msgspec

from ...confine import Confinement
from ..base import InputError, Tool, ToolContext, ToolOutcome
from ..inputs import UNSET, NotebookEditInput, parse
from ..session import Session
from .confined_io import read_bytes, run_edit
from .multiedit import atomic_write
from .results import Check, input_error, tool_error
from .write import _existing, _unread_or_changed

__all__ = ["NotebookEditTool"]

_INDEX_ID = re.compile(r"cell-(\d+)")
_SHOWN_CHARS = 2000


class _NotebookCall(msgspec.Struct, frozen=True):
    notebook_path: str
    cell_id: str | None
    new_source: str
    cell_type: str | None
    edit_mode: str


class NotebookEditTool(Tool):
    confines = True  # ``ctx.confine`` is checked on every descriptor before a byte changes

    def validate(self, raw: Mapping[str, Any]) -> _NotebookCall:
        value = parse(self.spec.name, NotebookEditInput, raw)
        if not value.notebook_path:
            raise input_error(self.spec.name, "notebook_path", "must not be empty")
        mode = "replace" if value.edit_mode is UNSET else value.edit_mode
        cell_id = None if value.cell_id is UNSET else value.cell_id or None
        cell_type = None if value.cell_type is UNSET else value.cell_type
        if mode == "insert" and cell_type is None:
            raise InputError(
                "<tool_use_error>Cell type is required when using edit_mode=insert."
                "</tool_use_error>"
            )
        if mode != "insert" and cell_id is None:
            raise InputError(
                "<tool_use_error>Cell ID must be specified when not inserting a new cell."
                "</tool_use_error>"
            )
        return _NotebookCall(value.notebook_path, cell_id, value.new_source, cell_type, mode)

    def describe(self, value: Any) -> str:
        call: _NotebookCall = value
        return call.notebook_path

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _NotebookCall = value
        return await run_edit(
            self.spec.name, edit_notebook, ctx.resolve(call.notebook_path), call, ctx
        )


def edit_notebook(
    path: str,
    call: _NotebookCall,
    session: Session,
    check: Check,
    confine: Confinement | None = None,
) -> ToolOutcome:
    """Raises ``Outside`` when ``confine`` is given and the path leads outside it."""
    check()
    if os.path.splitext(path)[1] != ".ipynb":
        return tool_error(
            "File must be a Jupyter notebook (.ipynb file). For editing other file types, use "
            "the Edit tool."
        )
    existing = _existing(path)
    if isinstance(existing, ToolOutcome):
        return existing
    if existing is None:
        return tool_error("Notebook file does not exist.")
    refusal = _unread_or_changed(session, path, existing)
    if refusal is not None:
        return refusal
    try:
        notebook = json.loads(read_bytes(path, confine))
    except OSError as exc:
        return tool_error(f"Cannot read {path}: {exc.strerror or exc}")
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return tool_error("Notebook is not valid JSON.")
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or notebook.get("nbformat") != 4:
        return tool_error(
            f"{path} is not a Jupyter notebook in nbformat 4 (no `cells` list, or another "
            "`nbformat`); NotebookEdit edits nbformat 4 notebooks only."
        )
    check()

    index = 0
    if call.cell_id is not None:
        found = _find(cells, call.cell_id)
        if isinstance(found, str):
            return tool_error(found)
        index = found
    has_ids = int(notebook.get("nbformat_minor") or 0) >= 5
    as_lines = any(isinstance(c, dict) and isinstance(c.get("source"), list) for c in cells)
    source: str | list[str] = (
        call.new_source.splitlines(keepends=True) if as_lines else (call.new_source)
    )

    if call.edit_mode == "delete":
        cell = cells.pop(index)
        shown = _label(cell, index)
        result = f"Deleted cell {shown}"
    elif call.edit_mode == "insert":
        position = index + 1 if call.cell_id is not None else 0
        cell = _new_cell(call.cell_type or "code", source)
        if has_ids:
            cell["id"] = _fresh_id(cells)
        cells.insert(position, cell)
        result = f"Inserted cell {_label(cell, position)} with {_shown(call.new_source)}"
    else:
        cell = cells[index]
        if not isinstance(cell, dict):
            return tool_error(f"Cell {index} of {path} is not a JSON object.")
        cell["source"] = source
        _set_type(cell, call.cell_type or str(cell.get("cell_type", "code")))
        result = f"Updated cell {_label(cell, index)} with {_shown(call.new_source)}"

    text = json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    failure = atomic_write(path, text.encode("utf-8", "surrogatepass"), session, confine)
    return failure or ToolOutcome(result)


def _find(cells: list[Any], cell_id: str) -> int | str:
    """The index of the cell ``cell_id`` names, or why there is none."""
    for i, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("id") == cell_id:
            return i
    m = _INDEX_ID.fullmatch(cell_id)
    if m is not None:
        i = int(m.group(1))
        if i < len(cells):
            return i
        return f"Cell with index {i} does not exist in notebook."
    return f'Cell with ID "{cell_id}" not found in notebook.'


def _new_cell(cell_type: str, source: str | list[str]) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
    _set_type(cell, cell_type)
    return cell


def _set_type(cell: dict[str, Any], cell_type: str) -> None:
    """Give the cell the fields nbformat 4 requires of its type, and only those."""
    cell["cell_type"] = cell_type
    if cell_type == "code":
        # Replaced or new code has not run: its old outputs would describe other code.
        cell["execution_count"] = None
        cell["outputs"] = []
        cell.pop("attachments", None)
    else:
        cell.pop("execution_count", None)
        cell.pop("outputs", None)


def _fresh_id(cells: list[Any]) -> str:
    taken = {c.get("id") for c in cells if isinstance(c, dict)}
    while True:
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate


def _label(cell: Any, index: int) -> str:
    cell_id = cell.get("id") if isinstance(cell, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else f"cell-{index}"


def _shown(source: str) -> str:
    return source if len(source) <= _SHOWN_CHARS else source[:_SHOWN_CHARS] + "…"
