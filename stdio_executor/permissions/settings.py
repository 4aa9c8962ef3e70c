"""Claude Code settings files: find, read, check and merge them.

Owns: which files are read (``.claude/settings.json`` and ``.claude/settings.local.json`` in
the workspace, then every ``--settings`` in order), how they merge (a later file wins per key,
so the last ``defaultMode`` counts; rule lists, ``additionalDirectories`` and hook lists are
concatenated), and a start-up error that names the file and the problem for anything that
is not in Claude Code's documented shape.
Must not: decide what a rule means for a call (``rules`` and ``policy`` do) or start
anything. It runs before the ``ready`` line, so it imports nothing heavy.

Only the keys this daemon acts on are checked (``settings_model`` holds their typed shape);
every other key of a settings file (``env``, ``model``, ``statusLine`` ...) is ignored, so a
team's file works unchanged. Hook types other than ``command`` and events other than
PreToolUse/PostToolUse are skipped with a note on stderr.

Workspace trust: the workspace's own files (``.claude/settings.json`` and
``.claude/settings.local.json``) come with the repository, so until the host trusts the
workspace they may only *narrow*: their deny and ask rules apply, and what would widen
(allow rules, ``defaultMode``, ``additionalDirectories``, hooks, a ``sandbox`` section) is
held back. ``Settings.pending`` is then the full merge that takes effect on trust, and
``Settings.held_back`` says what was held back. ``--settings`` files are the host's and
always apply in full.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import msgspec

from ..hooks.config import DEFAULT_TIMEOUT_S, HookCommand, HookGroup, Hooks, compile_matcher
from ..regular_file import read_regular
from ..sandbox.settings import SettingsSource
from .rules import Rule, RuleError, parse_rule
from .settings_model import MODES, HookGroupModel, SettingsFile, SettingsShapeError, decode

__all__ = [
    "MODES",
    "HeldBack",
    "Settings",
    "SettingsError",
    "SettingsSource",
    "load_settings",
    "project_dir",
]

log = logging.getLogger("stdio_executor")


class SettingsError(Exception):
    """A settings file that cannot be used; the message names the file and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class HeldBack(msgspec.Struct, frozen=True):
    """What an untrusted workspace's settings asked for and did not get (yet)."""

    files: tuple[str, ...] = ()  # the workspace files something was held back from
    allow: tuple[str, ...] = ()
    default_mode: str | None = None
    additional_directories: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()  # hook commands
    sandbox: bool = False  # a `sandbox` section (its relaxations are the sandbox's to judge)

    def __bool__(self) -> bool:
        return bool(
            self.allow
            or self.default_mode
            or self.additional_directories
            or self.hooks
            or self.sandbox
        )


class Settings(msgspec.Struct, frozen=True):
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    default_mode: str | None = None
    additional_directories: tuple[str, ...] = ()  # absolute
    hooks: Hooks = msgspec.field(default_factory=Hooks)
    files: tuple[str, ...] = ()  # every file that was read, in merge order
    # Whether the workspace's own files apply in full (see the module docstring).
    trusted: bool = True
    # Untrusted: the full merge that takes effect when the host trusts the workspace, and
    # what it adds. None when trusted.
    pending: Settings | None = None
    held_back: HeldBack = msgspec.field(default_factory=HeldBack)
    # The workspace's own files among ``files`` (untrusted input until trusted).
    workspace_files: tuple[str, ...] = ()
    # Every file in merge order, for sections read elsewhere (``sandbox``).
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
    trust_workspace: bool = True,
) -> Settings:
    """Read and merge the workspace's settings and every ``--settings`` argument.

    An ``--settings`` argument that starts with ``{`` is JSON text, as in Claude Code.
    With ``trust_workspace`` false, the workspace's files only narrow (module docstring).
    """
    home = os.path.expanduser("~")
    sources: list[tuple[str, SettingsFile, str, bool]] = []  # label, data, base, own
    for name in ("settings.json", "settings.local.json"):
        path = os.path.join(workspace, ".claude", name)
        if os.path.exists(path):
            sources.append((path, _read(path, planted=True), project_dir(path), True))
    for arg in extra:
        if arg.lstrip().startswith("{"):
            label = "--settings (inline JSON)"
            sources.append((label, _decode(label, arg), workspace, False))
        else:
            path = os.path.abspath(os.path.expanduser(arg))
            if not os.path.exists(path):
                raise SettingsError(arg, "no such file (given with --settings)")
            sources.append((path, _read(path), project_dir(path), False))
    full = _Merged()
    for label, data, base, _own in sources:
        full.add(label, data, base, workspace, home, ignore_case)

    def source_list(trust_own: bool) -> tuple[SettingsSource, ...]:
        return tuple(
            SettingsSource(
                label,
                {"sandbox": data.sandbox} if data.sandbox is not None else {},
                base,
                trust_own or not own,
            )
            for label, data, base, own in sources
        )

    trusted = msgspec.structs.replace(
        full.settings(workspace_files=[s[0] for s in sources if s[3]]),
        sources=source_list(True),
    )
    if trust_workspace or not trusted.workspace_files:
        return trusted
    narrow = _Merged()
    for label, data, base, own in sources:
        narrow.add(label, data, base, workspace, home, ignore_case, narrow_only=own)
    held = _held_back(sources, trusted, narrow)
    return msgspec.structs.replace(
        narrow.settings(workspace_files=trusted.workspace_files),
        sources=source_list(False),
        trusted=False,
        pending=trusted,
        held_back=held,
    )


def _held_back(
    sources: Sequence[tuple[str, SettingsFile, str, bool]], full: Settings, narrow: _Merged
) -> HeldBack:
    own = [(label, data) for label, data, _base, is_own in sources if is_own]
    files = []
    allow: list[str] = []
    hooks: list[str] = []
    dirs: list[str] = []
    mode: str | None = None
    sandbox = False
    for label, data in own:
        held = False
        permissions = data.permissions
        if permissions is not None:
            allow += permissions.allow or []
            dirs += permissions.additional_directories or []
            if permissions.default_mode is not None:
                mode = permissions.default_mode
            held = bool(permissions.allow or permissions.additional_directories or mode)
        if data.hooks is not None:
            for groups in (data.hooks.PreToolUse, data.hooks.PostToolUse):
                for group in groups or []:
                    hooks += [h.command for h in group.hooks if h.command]
            held = held or bool(hooks)
        if data.sandbox:
            sandbox = held = True
        if held:
            files.append(label)
    if mode is not None and full.default_mode != mode:
        mode = None  # a later (trusted) file set the mode anyway
    return HeldBack(tuple(files), tuple(allow), mode, tuple(dirs), tuple(hooks), sandbox)


_MAX_SETTINGS = 16 * 1024 * 1024


def _read(path: str, *, planted: bool = False) -> SettingsFile:
    """``planted``: the workspace's own file, read as ``read_regular`` reads (a FIFO in its
    place must not hang start-up). A host's ``--settings`` path may be a pipe on purpose
    (``--settings <(jq ...)``)."""
    try:
        if planted:
            data = read_regular(path, _MAX_SETTINGS)
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise SettingsError(path, f"cannot be read: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(path, f"cannot be read: {exc}") from None
    return _decode(path, text)


def _decode(label: str, text: str) -> SettingsFile:
    if not text.strip():
        return SettingsFile()  # an empty file is no settings, not an error
    try:
        return decode(text)
    except SettingsShapeError as exc:
        raise SettingsError(label, str(exc)) from None
    except msgspec.DecodeError:
        pass
    # Not JSON at all: the standard library's message says where (line and column).
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            label, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    raise SettingsError(label, "is not valid JSON")


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

    def settings(self, workspace_files: Sequence[str] = ()) -> Settings:
        return Settings(
            tuple(self.allow),
            tuple(self.deny),
            tuple(self.ask),
            self.mode,
            tuple(dict.fromkeys(self.dirs)),
            Hooks(tuple(self.pre), tuple(self.post)),
            tuple(self.files),
            workspace_files=tuple(workspace_files),
        )

    def add(
        self,
        path: str,
        data: SettingsFile,
        base_dir: str,
        workspace: str,
        home: str,
        ignore_case: bool,
        *,
        narrow_only: bool = False,
    ) -> None:
        """Merge one file; ``narrow_only``: only its deny and ask rules (an untrusted
        workspace file)."""
        self.files.append(path)
        permissions = data.permissions
        if permissions is not None:
            lists = [("deny", permissions.deny, self.deny), ("ask", permissions.ask, self.ask)]
            if not narrow_only:
                lists.insert(0, ("allow", permissions.allow, self.allow))
            for key, texts, target in lists:
                for i, text in enumerate(texts or ()):
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
            if narrow_only:
                return
            if permissions.default_mode is not None:
                self.mode = permissions.default_mode
            for d in permissions.additional_directories or ():
                expanded = os.path.expanduser(d)
                self.dirs.append(os.path.normpath(os.path.join(base_dir, expanded)))
        if narrow_only:
            return
        if data.hooks is not None:
            for event, groups, target_groups in (
                ("PreToolUse", data.hooks.PreToolUse, self.pre),
                ("PostToolUse", data.hooks.PostToolUse, self.post),
            ):
                for i, group in enumerate(groups or ()):
                    target_groups.append(self._group(path, f"hooks.{event}[{i}]", group))

    def _group(self, path: str, where: str, group: HookGroupModel) -> HookGroup:
        matcher = group.matcher or ""
        commands: list[HookCommand] = []
        for j, entry in enumerate(group.hooks):
            at = f"{where}.hooks[{j}]"
            if entry.type != "command":
                log.warning(
                    "settings %s: %s is a %r hook; only command hooks run", path, at, entry.type
                )
                continue
            if entry.command is None or not entry.command.strip():
                raise SettingsError(path, f"{at}.command must be a non-empty string")
            timeout = entry.timeout if entry.timeout is not None else DEFAULT_TIMEOUT_S
            commands.append(HookCommand(entry.command, float(timeout), path))
        try:
            return compile_matcher(matcher, tuple(commands))
        except Exception as exc:  # re.error
            raise SettingsError(
                path, f"{where}.matcher {matcher!r} is not a valid regular expression: {exc}"
            ) from None
