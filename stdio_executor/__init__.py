"""stdio-executor: Claude Code's tool execution engine as an NDJSON subprocess."""

import os as _os

__version__ = "0.1.0"
__all__ = ["PARENT_AT_START", "__version__"]

# The process that started us, read before anything else of ours runs (this is the first
# module both entry points execute). A host that dies during start-up is replaced as our
# parent by init or a subreaper; reading getppid() only once the event loop runs would take
# that replacement for the host and never notice (issue 10).
PARENT_AT_START = _os.getppid()
