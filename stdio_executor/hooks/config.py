"""Hook settings: which commands run for which tools.

Owns: one configured hook command (its timeout and the file it came from), a matcher group
as Claude Code writes it (``{"matcher": "Edit|Write", "hooks": [...]}``), and the matcher
syntax: empty or ``*`` matches every tool, a plain name or ``A|B`` list matches those names
exactly, anything else is a regular expression searched in the tool's name (as in Claude Code).
Must not: run anything (``runner`` does) or read settings files (``permissions.settings``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

__all__ = ["DEFAULT_TIMEOUT_S", "HookCommand", "HookGroup", "Hooks", "compile_matcher"]

DEFAULT_TIMEOUT_S = 60.0
_PLAIN = re.compile(r"[A-Za-z0-9_| ]+")  # spaces around | are forgiven


class HookCommand(msgspec.Struct, frozen=True):
    command: str
    timeout: float = DEFAULT_TIMEOUT_S
    source: str = ""


class HookGroup(msgspec.Struct, frozen=True):
    matcher: str
    hooks: tuple[HookCommand, ...]
    pattern: re.Pattern[str] | None = None  # None: the plain-name form

    def matches(self, tool: str) -> bool:
        matcher = self.matcher.strip()
        if matcher in ("", "*"):
            return True
        if self.pattern is None:
            return tool in (name.strip() for name in matcher.split("|"))
        return self.pattern.search(tool) is not None


def compile_matcher(matcher: str, hooks: tuple[HookCommand, ...]) -> HookGroup:
    """A matcher group; ``re.error`` if the matcher is neither plain nor a valid regex."""
    text = matcher.strip()
    if text in ("", "*") or _PLAIN.fullmatch(text):
        return HookGroup(matcher, hooks)
    return HookGroup(matcher, hooks, re.compile(text))


class Hooks(msgspec.Struct, frozen=True):
    pre_tool_use: tuple[HookGroup, ...] = ()
    post_tool_use: tuple[HookGroup, ...] = ()

    @staticmethod
    def _for(groups: Sequence[HookGroup], tool: str) -> tuple[HookCommand, ...]:
        # One run per distinct command, as Claude Code does when several matchers list it.
        seen: dict[str, HookCommand] = {}
        for group in groups:
            if group.matches(tool):
                for hook in group.hooks:
                    seen.setdefault(hook.command, hook)
        return tuple(seen.values())

    def pre(self, tool: str) -> tuple[HookCommand, ...]:
        return self._for(self.pre_tool_use, tool) if self.pre_tool_use else ()

    def post(self, tool: str) -> tuple[HookCommand, ...]:
        return self._for(self.post_tool_use, tool) if self.post_tool_use else ()
