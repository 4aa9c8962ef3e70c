"""Text from events made safe to show to a person (the live view, plain text, the SVG).

Owns: the one rule for what of a tool's output reaches a terminal or an XML document as is.
Must not: be imported by the daemon (it never shows anything to a person).
"""

from __future__ import annotations

__all__ = ["visible"]

# What a tool printed is shown, never obeyed: a file the model read can hold escape
# sequences that retitle the terminal, write the clipboard (OSC 52) or redraw the screen, and
# bidirectional overrides that make text read differently from what it is. Every C0 and C1
# control but tab and newline, DEL and the bidi controls are shown as escapes instead.
_VISIBLE = {c: f"\\x{c:02x}" for c in (*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0))}
_VISIBLE.update({c: f"\\u{c:04x}" for c in (0x200E, 0x200F, *range(0x202A, 0x202F))})
_VISIBLE.update({c: f"\\u{c:04x}" for c in range(0x2066, 0x206A)})


def visible(text: str) -> str:
    """``text`` with every control that a terminal would act on shown as an escape."""
    return text.translate(_VISIBLE)
