"""PreToolUse and PostToolUse command hooks, compatible with Claude Code's (SPEC section 6)."""
