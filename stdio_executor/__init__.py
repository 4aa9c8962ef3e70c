"""stdio-executor: Claude Code's tool execution engine as an NDJSON subprocess."""

__version__ = "0.1.0"
__all__ = ["__version__"]
