"""The anyio driver: stdio framing, the loop that owns the core, tool tasks and scopes."""
