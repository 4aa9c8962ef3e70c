"""Claude Code's ``sandbox`` settings section, merged with the trust of each file.

Owns: reading ``sandbox.*`` from every settings file (already decoded by
``permissions.settings``), checking its shape (a start-up error names the file and key), and
merging it: a later file wins per scalar key, lists are concatenated, as Claude Code does.
Each file is *trusted* (``--settings``, or the workspace's own files once the host trusts the
workspace) or not; an untrusted file may only make the sandbox stricter:

- counted from every file: ``enabled: true``, ``failIfUnavailable: true``,
  ``autoAllowBashIfSandboxed: false``, ``allowUnsandboxedCommands: false``,
  ``filesystem.denyRead``, ``filesystem.denyWrite``;
- counted from trusted files only (held back otherwise, and listed for ``ready``):
  ``enabled: false``, ``autoAllowBashIfSandboxed: true``, ``excludedCommands``,
  ``allowUnsandboxedCommands: true``, ``filesystem.allowWrite``, ``filesystem.allowRead``,
  ``network.allowedDomains``, ``network.allowLocalBinding: true``,
  ``network.allowAllUnixSockets: true``, ``network.allowUnixSockets``.

Must not: touch the kernel or decide per call (``plan`` does). Cheap to import.

Paths follow Claude Code's prefixes: ``//abs`` is absolute, ``~/x`` is under the home
directory, ``/x`` is relative to the settings file's project, anything else to the
workspace. A deny path written ``/x`` also denies the absolute ``/x``: someone who wrote
``"denyRead": ["/etc/secret"]`` meant one or the other, and denying both is the safe reading.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import msgspec

__all__ = ["SandboxSettings", "SandboxSettingsError", "SettingsSource", "sandbox_settings"]


class SandboxSettingsError(Exception):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class SettingsSource(msgspec.Struct, frozen=True):
    """One decoded settings file: where it came from, what ``/x`` is relative to, and
    whether its relaxations count."""

    label: str
    data: Any
    base_dir: str
    trusted: bool


class SandboxSettings(msgspec.Struct, frozen=True):
    enabled: bool | None = None  # None: no file said
    enabled_by_trusted: bool = False  # `enabled: true` came from a trusted file
    fail_if_unavailable: bool = False
    auto_allow: bool = True
    excluded_commands: tuple[str, ...] = ()
    allow_unsandboxed: bool = True
    allowed_domains: tuple[str, ...] = ()
    allow_local_binding: bool = False
    allow_all_unix_sockets: bool = False
    allow_unix_sockets: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    # "FILE: key" for every relaxation an untrusted file asked for and did not get.
    held_back: tuple[str, ...] = msgspec.field(default=())

    @property
    def required(self) -> bool:
        """Settings that want the sandbox and no unprotected fallback."""
        return self.fail_if_unavailable


def sandbox_settings(
    sources: Sequence[SettingsSource], *, workspace: str, home: str | None = None
) -> SandboxSettings:
    home = home or os.path.expanduser("~")
    m: dict[str, Any] = {
        "enabled": None,
        "enabled_by_trusted": False,
        "fail_if_unavailable": False,
        "auto_allow": True,
        "allow_unsandboxed": True,
        "allow_local_binding": False,
        "allow_all_unix_sockets": False,
    }
    lists: dict[str, list[str]] = {
        k: []
        for k in (
            "excluded_commands",
            "allowed_domains",
            "allow_unix_sockets",
            "allow_write",
            "deny_write",
            "deny_read",
            "allow_read",
        )
    }
    held: list[str] = []
    for src in sources:
        data = src.data if isinstance(src.data, dict) else {}
        section = data.get("sandbox")
        if section is None:
            continue
        r = _Reader(src, held)
        if not isinstance(section, dict):
            raise SandboxSettingsError(src.label, "`sandbox` must be an object")
        enabled = r.flag(section, "enabled")
        if enabled is True:
            m["enabled"] = True
            m["enabled_by_trusted"] = m["enabled_by_trusted"] or src.trusted
        elif enabled is False and r.relax("enabled"):
            m["enabled"] = False
            m["enabled_by_trusted"] = False
        fail = r.flag(section, "failIfUnavailable")
        if fail is True or (fail is False and src.trusted):
            m["fail_if_unavailable"] = fail
        for key, name in (
            ("autoAllowBashIfSandboxed", "auto_allow"),
            ("allowUnsandboxedCommands", "allow_unsandboxed"),
        ):
            value = r.flag(section, key)
            if value is False or (value is True and r.relax(key)):
                m[name] = value
        excluded = r.strings(section, "excludedCommands")
        if excluded and r.relax("excludedCommands"):
            lists["excluded_commands"] += excluded

        network = r.section(section, "network")
        domains = r.strings(network, "allowedDomains", "network.")
        if domains and r.relax("network.allowedDomains"):
            lists["allowed_domains"] += [d.strip().lower().rstrip(".") for d in domains]
        sockets = r.strings(network, "allowUnixSockets", "network.")
        if sockets and r.relax("network.allowUnixSockets"):
            lists["allow_unix_sockets"] += sockets
        for key, name in (
            ("allowLocalBinding", "allow_local_binding"),
            ("allowAllUnixSockets", "allow_all_unix_sockets"),
        ):
            value = r.flag(network, key, "network.")
            if value is False or (value is True and r.relax(f"network.{key}")):
                m[name] = value

        fs = r.section(section, "filesystem")
        for key, name, widening in (
            ("allowWrite", "allow_write", True),
            ("allowRead", "allow_read", True),
            ("denyWrite", "deny_write", False),
            ("denyRead", "deny_read", False),
        ):
            paths = r.strings(fs, key, "filesystem.")
            if not paths or (widening and not r.relax(f"filesystem.{key}")):
                continue
            for p in paths:
                lists[name] += _resolve(p, src.base_dir, workspace, home, deny=not widening)

    return SandboxSettings(
        enabled=m["enabled"],
        enabled_by_trusted=m["enabled_by_trusted"],
        fail_if_unavailable=m["fail_if_unavailable"],
        auto_allow=m["auto_allow"],
        excluded_commands=tuple(dict.fromkeys(lists["excluded_commands"])),
        allow_unsandboxed=m["allow_unsandboxed"],
        allowed_domains=tuple(dict.fromkeys(lists["allowed_domains"])),
        allow_local_binding=m["allow_local_binding"],
        allow_all_unix_sockets=m["allow_all_unix_sockets"],
        allow_unix_sockets=tuple(dict.fromkeys(lists["allow_unix_sockets"])),
        allow_write=tuple(dict.fromkeys(lists["allow_write"])),
        deny_write=tuple(dict.fromkeys(lists["deny_write"])),
        deny_read=tuple(dict.fromkeys(lists["deny_read"])),
        allow_read=tuple(dict.fromkeys(lists["allow_read"])),
        held_back=tuple(held),
    )


class _Reader:
    """Typed access to one file's ``sandbox`` section; errors name the file and key."""

    def __init__(self, src: SettingsSource, held: list[str]) -> None:
        self.src = src
        self.held = held

    def section(self, parent: dict[str, Any], key: str) -> dict[str, Any]:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise SandboxSettingsError(self.src.label, f"sandbox.{key} must be an object")
        return value

    def flag(self, section: dict[str, Any], key: str, prefix: str = "") -> bool | None:
        value = section.get(key)
        if value is not None and not isinstance(value, bool):
            raise SandboxSettingsError(
                self.src.label, f"sandbox.{prefix}{key} must be true or false"
            )
        return value

    def strings(self, section: dict[str, Any], key: str, prefix: str = "") -> list[str]:
        value = section.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SandboxSettingsError(
                self.src.label, f"sandbox.{prefix}{key} must be a list of strings"
            )
        return [v for v in value if v.strip()]

    def relax(self, key: str) -> bool:
        """Whether a widening from this file counts; noted for ``ready`` when it does not."""
        if not self.src.trusted:
            self.held.append(f"{self.src.label}: sandbox.{key}")
        return self.src.trusted


def _resolve(text: str, base_dir: str, workspace: str, home: str, *, deny: bool) -> list[str]:
    text = text.strip()
    if text.startswith("//"):
        return [os.path.normpath("/" + text[2:])]
    if text == "~" or text.startswith("~/"):
        return [os.path.normpath(os.path.join(home, text[2:]))]
    if text.startswith("/"):
        relative = os.path.normpath(os.path.join(base_dir, text[1:]))
        return [relative, os.path.normpath(text)] if deny else [relative]
    return [os.path.normpath(os.path.join(workspace, text))]
