"""The file tools: Read, Write, Edit, Glob and Grep (SPEC section 5).

Owns nothing itself; the catalog loads the tools by these names. Each module owns one part:
``read`` (Read), ``write`` (Write, Edit and the read-before-write rule), ``globbing``
(Glob), ``grep`` (Grep), ``text`` (encodings, line endings, binary and image sniffing) and
``results`` (error wording and spilling of oversized text).
"""

from .globbing import GlobTool
from .grep import GrepTool
from .read import ReadTool
from .write import EditTool, WriteTool

__all__ = ["EditTool", "GlobTool", "GrepTool", "ReadTool", "WriteTool"]
