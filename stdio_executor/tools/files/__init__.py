"""The file tools: Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep and LS (SPEC 5).

Owns nothing itself; the catalog loads the tools by these names. Each module owns one part:
``read`` (Read), ``write`` (Write, Edit and the read-before-write rule), ``multiedit``
(MultiEdit and the atomic write it shares), ``notebook`` (NotebookEdit), ``globbing``
(Glob), ``grep`` (Grep), ``listing`` (LS), ``text`` (encodings, line endings, binary and
image sniffing) and ``results`` (error wording and spilling of oversized text).
"""

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
