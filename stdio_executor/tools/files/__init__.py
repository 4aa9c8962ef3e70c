"""The file tools: Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep and LS (SPEC 5).

Owns nothing itself; the catalog loads the tools by these names. Each module owns one part:
``read`` (Read), ``write`` (Write, Edit and the read-before-write rule), ``multiedit``
(MultiEdit and the atomic write it shares), ``notebook`` (NotebookEdit), ``globbing``
(Glob), ``grep`` (Grep), ``listing`` (LS), ``text`` (encodings, line endings, binary and
image sniffing) and ``results`` (error wording and spilling of oversized text).

Each tool's module loads when the tool is first used (PEP 562 ``__getattr__``): the first
call after ``ready`` pays for its own tool only (bench/NOTES.md, start-up).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .globbing import GlobTool
    from .grep import GrepTool
    from .listing import LSTool
    from .multiedit import MultiEditTool
    from .notebook import NotebookEditTool
    from .read import ReadTool
    from .write import EditTool, WriteTool

__all__ = [
    "EditTool",
    "GlobTool",
    "GrepTool",
    "LSTool",
    "MultiEditTool",
    "NotebookEditTool",
    "ReadTool",
    "WriteTool",
]

_MODULES = {
    "EditTool": "write",
    "GlobTool": "globbing",
    "GrepTool": "grep",
    "LSTool": "listing",
    "MultiEditTool": "multiedit",
    "NotebookEditTool": "notebook",
    "ReadTool": "read",
    "WriteTool": "write",
}


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
