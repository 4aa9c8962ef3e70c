"""Claude Code settings files: find, read, check and merge them.

Owns: which files are read (``.claude/settings.json`` and ``.claude/settings.local.json`` in
the workspace, then every ``--settings`` in order), how they merge (a later file wins per key,
so the last ``defaultMode`` counts; rule lists, ``additionalDirectories`` and hook lists are
concatenated), and a start-up error that names the file and the problem for anything that
is not in Claude Code's documented shape.
Must not: decide what a rule means for a call (``rules`` and ``policy`` do) or start
anything. It runs before the ``ready`` line, so it imports nothing heavy.

Only the keys this daemon acts on are checked; every other key of a settings file (``env``,
``model``, ``statusLine`` ...) is ignored, so a team's file works unchanged. Hook types other
than ``command`` and events other than PreToolUse/PostToolUse are skipped with a note on
stderr.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..hooks.config import DEFAULT_TIMEOUT_S, HookCommand, HookGroup, Hooks, compile_matcher
from ..sandbox.settings import SettingsSource
from .rules import Rule, RuleError, parse_rule

__all__ = ["MODES", "Settings", "SettingsError", "load_settings", "project_dir"]

log = logging.getLogger("stdio_executor")

MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
_HOOK_EVENTS = ("PreToolUse", "PostToolUse")


class SettingsError(Exception):
    """A settings file that cannot be used; the message names the file and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Settings:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    default_mode: str | None = None
    additional_directories: tuple[str, ...] = ()  # absolute
    hooks: Hooks = field(default_factory=Hooks)
    files: tuple[str, ...] = ()  # every file that was read, in merge order
    # Every file's decoded data and trust, for sections read elsewhere (``sandbox``).
    sources: tuple[SettingsSource, ...] = ()


def project_dir(settings_path: str) -> str:
    """What ``/path`` rules of a settings file are relative to: the project whose
    ``.claude`` directory holds it, else the file's own directory."""
    directory = os.path.dirname(os.path.abspath(settings_path))
    if os.path.basename(directory) == ".claude":
        return os.path.dirname(directory)
    return directory


def case_insensitive(directory: str) -> bool:
    """Whether the file system under ``directory`` ignores case (macOS, Windows shares)."""
    flipped = directory.swapcase()
    if flipped == directory:
        return False
    try:
        return os.path.samefile(directory, flipped)
    except OSError:
        return False


def load_settings(
    workspace: str,
    extra: Sequence[str] = (),
    *,
    ignore_case: bool = False,
    trust_workspace: bool = False,
) -> Settings:
    """Read and merge the workspace's settings and every ``--settings`` argument.

    An ``--settings`` argument that starts with ``{`` is JSON text, as in Claude Code.
    """
    home = os.path.expanduser("~")
    merged = _Merged()
    for name in ("settings.json", "settings.local.json"):
        path = os.path.join(workspace, ".claude", name)
        if os.path.exists(path):
            merged.add(path, _read(path), project_dir(path), workspace, home, ignore_case)
            merged.trusted.append(trust_workspace)
    for arg in extra:
        if arg.lstrip().startswith("{"):
            label = "--settings (inline JSON)"
            merged.add(label, _decode(label, arg), workspace, workspace, home, ignore_case)
            merged.trusted.append(True)
        else:
            path = os.path.abspath(os.path.expanduser(arg))
            if not os.path.exists(path):
                raise SettingsError(arg, "no such file (given with --settings)")
            merged.add(path, _read(path), project_dir(path), workspace, home, ignore_case)
            merged.trusted.append(True)
    return merged.settings()


def _read(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(path, f"cannot be read: {exc}") from None
    return _decode(path, text)


def _decode(label: str, text: str) -> Any:
    if not text.strip():
        return {}  # an empty file is no settings, not an error
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            label, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


class _Merged:
    def __init__(self) -> None:
        self.allow: list[Rule] = []
        self.deny: list[Rule] = []
        self.ask: list[Rule] = []
        self.mode: str | None = None
        self.dirs: list[str] = []
        self.pre: list[HookGroup] = []
        self.post: list[HookGroup] = []
        self.files: list[str] = []
        self.raw: list[tuple[str, Any, str]] = []
        self.trusted: list[bool] = []

    def settings(self) -> Settings:
        return Settings(
            tuple(self.allow),
            tuple(self.deny),
            tuple(self.ask),
            self.mode,
            tuple(dict.fromkeys(self.dirs)),
            Hooks(tuple(self.pre), tuple(self.post)),
            tuple(self.files),
            tuple(
                SettingsSource(label, data, base, trusted)
                for (label, data, base), trusted in zip(self.raw, self.trusted, strict=True)
            ),
        )

    def add(
        self,
        path: str,
        data: Any,
        base_dir: str,
        workspace: str,
        home: str,
        ignore_case: bool,
    ) -> None:
        if not isinstance(data, dict):
            raise SettingsError(path, f"must hold a JSON object, not {_kind(data)}")
        self.files.append(path)
        self.raw.append((path, data, base_dir))
        permissions = data.get("permissions")
        if permissions is not None:
            if not isinstance(permissions, dict):
                raise SettingsError(
                    path, f"`permissions` must be an object, not {_kind(permissions)}"
                )
            for key, target in (("allow", self.allow), ("deny", self.deny), ("ask", self.ask)):
                for i, text in enumerate(_strings(path, f"permissions.{key}", permissions)):
                    try:
                        rule = parse_rule(
                            text,
                            path,
                            base_dir=base_dir,
                            workspace=workspace,
                            home=home,
                            ignore_case=ignore_case,
                        )
                    except (RuleError, ValueError) as exc:
                        raise SettingsError(path, f"permissions.{key}[{i}]: {exc}") from None
                    if rule not in target:
                        target.append(rule)
            mode = permissions.get("defaultMode")
            if mode is not None:
                if mode not in MODES:
                    raise SettingsError(
                        path,
                        f"permissions.defaultMode is {mode!r}; expected one of " + ", ".join(MODES),
                    )
                self.mode = mode
            for d in _strings(path, "permissions.additionalDirectories", permissions):
                expanded = os.path.expanduser(d)
                self.dirs.append(os.path.normpath(os.path.join(base_dir, expanded)))
        hooks = data.get("hooks")
        if hooks is not None:
            self._hooks(path, hooks)

    def _hooks(self, path: str, hooks: Any) -> None:
        if not isinstance(hooks, dict):
            raise SettingsError(path, f"`hooks` must be an object, not {_kind(hooks)}")
        for event, groups in hooks.items():
            if event not in _HOOK_EVENTS:
                log.info("settings %s: %s hooks are not run by stdio-executor", path, event)
                continue
            where = f"hooks.{event}"
            if not isinstance(groups, list):
                raise SettingsError(path, f"{where} must be a list, not {_kind(groups)}")
            target = self.pre if event == "PreToolUse" else self.post
            for i, group in enumerate(groups):
                target.append(self._group(path, f"{where}[{i}]", group))

    def _group(self, path: str, where: str, group: Any) -> HookGroup:
        if not isinstance(group, dict):
            raise SettingsError(path, f"{where} must be an object, not {_kind(group)}")
        matcher = group.get("matcher", "")
        if matcher is None:
            matcher = ""
        if not isinstance(matcher, str):
            raise SettingsError(path, f"{where}.matcher must be a string, not {_kind(matcher)}")
        entries = group.get("hooks")
        if not isinstance(entries, list):
            raise SettingsError(path, f"{where}.hooks must be a list, not {_kind(entries)}")
        commands: list[HookCommand] = []
        for j, entry in enumerate(entries):
            at = f"{where}.hooks[{j}]"
            if not isinstance(entry, dict):
                raise SettingsError(path, f"{at} must be an object, not {_kind(entry)}")
            kind = entry.get("type", "command")
            if kind != "command":
                log.warning("settings %s: %s is a %r hook; only command hooks run", path, at, kind)
                continue
            command = entry.get("command")
            if not isinstance(command, str) or not command.strip():
                raise SettingsError(path, f"{at}.command must be a non-empty string")
            timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
            if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
                raise SettingsError(path, f"{at}.timeout must be a positive number of seconds")
            commands.append(HookCommand(command, float(timeout), path))
        try:
            return compile_matcher(matcher, tuple(commands))
        except Exception as exc:  # re.error
            raise SettingsError(
                path, f"{where}.matcher {matcher!r} is not a valid regular expression: {exc}"
            ) from None


def _strings(path: str, where: str, section: dict[str, Any]) -> list[str]:
    value = section.get(where.rsplit(".", 1)[1])
    if value is None:
        return []
    if not isinstance(value, list):
        raise SettingsError(path, f"{where} must be a list of strings, not {_kind(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise SettingsError(path, f"{where}[{i}] must be a string, not {_kind(item)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
