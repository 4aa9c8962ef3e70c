"""Permission rules, modes, the ask round-trip and hooks (SPEC section 6)."""
