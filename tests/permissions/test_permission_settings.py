"""Settings files: Claude Code's format read unchanged, merging, and clear start-up errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from permission_harness import Workspace, workspace

from stdio_executor.permissions.rules import Rule, RuleError, parse_rule
from stdio_executor.permissions.settings import SettingsError, load_settings


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    yield from workspace(tmp_path)


REPO_ROOT = Path(__file__).resolve().parents[2]

# A project settings file as Claude Code's settings and hooks references document it:
# unknown keys, rules for tools this daemon does not have, hook events it does not run,
# a prompt hook, $CLAUDE_PROJECT_DIR in a command.
CLAUDE_CODE_SETTINGS = """\
{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "claude-sonnet-4-5",
  "env": {"NODE_ENV": "test"},
  "includeCoAuthoredBy": false,
  "permissions": {
    "allow": [
      "Bash(npm run lint)",
      "Bash(npm run test:*)",
      "Bash(git diff *)",
      "Read(~/.zshrc)",
      "Edit(/src/**/*.ts)",
      "WebFetch(domain:example.com)",
      "mcp__github",
      "mcp__puppeteer__puppeteer_navigate"
    ],
    "ask": ["Bash(git push:*)"],
    "deny": [
      "Bash(curl:*)",
      "Read(./.env)",
      "Read(./.env.*)",
      "Read(./secrets/**)",
      "WebFetch"
    ],
    "additionalDirectories": ["../docs/"],
    "defaultMode": "acceptEdits"
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/check.sh"}
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Edit|MultiEdit|Write",
        "hooks": [
          {"type": "command", "command": "npx prettier --write", "timeout": 30},
          {"type": "prompt", "prompt": "Check the edit"}
        ]
      }
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}],
    "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify"}]}]
  },
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}
}
"""


def test_a_claude_code_settings_file_is_read_unchanged(space: Workspace) -> None:
    path = space.ws / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(CLAUDE_CODE_SETTINGS)
    settings = load_settings(str(space.ws))
    assert settings.files == (str(path),)
    assert [r.text for r in settings.allow][:3] == [
        "Bash(npm run lint)",
        "Bash(npm run test:*)",
        "Bash(git diff *)",
    ]
    assert len(settings.deny) == 5 and len(settings.ask) == 1
    assert settings.default_mode == "acceptEdits"
    assert settings.additional_directories == (str(space.root / "docs"),)
    assert [h.command for h in settings.hooks.pre("Bash")] == [
        "$CLAUDE_PROJECT_DIR/.claude/hooks/check.sh"
    ]
    assert settings.hooks.pre("Read") == ()
    post = settings.hooks.post("Write")
    assert [(h.command, h.timeout) for h in post] == [("npx prettier --write", 30.0)]


def test_the_claude_code_file_decides_as_claude_code_would(space: Workspace) -> None:
    path = space.ws / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(CLAUDE_CODE_SETTINGS)
    (space.ws / "src" / "app").mkdir(parents=True)
    gate = space.gate()
    assert gate.policy.mode == "acceptEdits"

    def bash(command: str) -> str:
        return space.decide(gate, "Bash", {"command": command}).kind

    assert bash("npm run test:unit -- --ci") == "ask"  # `test:*` is `test *` now
    assert bash("npm run test -- --ci") == "allow"
    assert bash("npm run lint") == "allow"
    assert bash("npm run lint && curl x | sh") == "deny"
    assert bash("git push origin main") == "ask"
    assert bash("git diff HEAD~1 && git push") == "ask"
    read = space.decide(gate, "Read", {"file_path": ".env.local"})
    assert read.kind == "deny"
    edit = {"file_path": "src/app/main.ts", "content": "x"}
    assert space.decide(gate, "Write", edit).kind == "allow"
    assert space.decide(gate, "Write", {"file_path": "../notes.txt", "content": ""}).kind == "ask"


def test_later_files_win_per_key_and_rule_lists_merge(space: Workspace) -> None:
    space.settings({"permissions": {"defaultMode": "plan", "allow": ["Bash(a)"]}})
    space.settings(
        {"permissions": {"defaultMode": "acceptEdits", "deny": ["Bash(b)"]}},
        "settings.local.json",
    )
    extra = space.root / "team.json"
    extra.write_text(json.dumps({"permissions": {"allow": ["Bash(c)"]}}))
    inline = '{"permissions": {"defaultMode": "dontAsk", "ask": ["Bash(d)"]}}'
    settings = load_settings(str(space.ws), [str(extra), inline])
    assert settings.default_mode == "dontAsk"
    assert [r.text for r in settings.allow] == ["Bash(a)", "Bash(c)"]
    assert [r.text for r in settings.deny] == ["Bash(b)"]
    assert [r.text for r in settings.ask] == ["Bash(d)"]
    assert settings.files == (
        str(space.ws / ".claude" / "settings.json"),
        str(space.ws / ".claude" / "settings.local.json"),
        str(extra),
        "--settings (inline JSON)",
    )


def test_the_permission_mode_option_overrides_default_mode(space: Workspace) -> None:
    space.settings({"permissions": {"defaultMode": "plan"}})
    assert space.gate().policy.mode == "plan"
    assert space.gate(mode="bypassPermissions").policy.mode == "bypassPermissions"
    (space.root / "empty").mkdir()
    assert Workspace(space.root / "empty").gate().policy.mode == "default"


def test_slash_rules_are_relative_to_the_settings_files_project(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    project = tmp_path / "proj" / ".claude"
    project.mkdir(parents=True)

    def rule(spec: str, source: Path) -> Rule:
        from stdio_executor.permissions.settings import project_dir

        return parse_rule(
            f"Read({spec})",
            str(source),
            base_dir=project_dir(str(source)),
            workspace=str(tmp_path / "ws"),
            home=str(tmp_path / "home"),
        )

    from_project = rule("/data/**", project / "settings.json")
    assert from_project.path is not None
    assert from_project.path.matches(str(tmp_path / "proj" / "data" / "x"))
    from_conf = rule("/data/**", conf / "settings.json")
    assert from_conf.path is not None
    assert from_conf.path.matches(str(conf / "data" / "x"))
    plain = rule("data/**", conf / "settings.json")
    assert plain.path is not None
    assert plain.path.matches(str(tmp_path / "ws" / "data" / "x"))
    absolute = rule("//etc/**", conf / "settings.json")
    assert absolute.path is not None and absolute.path.matches("/etc/passwd")
    assert not absolute.path.matches("/var/etc/passwd")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "is not valid JSON: Expecting property name enclosed in double quotes at line 1"),
        ("[]", "must hold a JSON object, not a list"),
        ('{"permissions": []}', "`permissions` must be an object, not a list"),
        ('{"permissions": {"allow": "Bash"}}', "permissions.allow must be a list of strings"),
        ('{"permissions": {"deny": ["Bash", 3]}}', "permissions.deny[1] must be a string"),
        ('{"permissions": {"allow": ["Bash(npm"]}}', "permissions.allow[0]: 'Bash(npm' is not"),
        ('{"permissions": {"ask": [""]}}', "permissions.ask[0]: a rule must be a non-empty"),
        ('{"permissions": {"defaultMode": "yolo"}}', "permissions.defaultMode is 'yolo'"),
        ('{"hooks": []}', "`hooks` must be an object, not a list"),
        ('{"hooks": {"PreToolUse": {}}}', "hooks.PreToolUse must be a list"),
        ('{"hooks": {"PreToolUse": [{"matcher": "Bash"}]}}', "hooks.PreToolUse[0].hooks must"),
        (
            '{"hooks": {"PostToolUse": [{"hooks": [{"type": "command"}]}]}}',
            "hooks.PostToolUse[0].hooks[0].command must be a non-empty string",
        ),
        (
            '{"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "timeout": -1}]}]}}',
            "hooks.PreToolUse[0].hooks[0].timeout must be a positive number of seconds",
        ),
        (
            '{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}',
            "hooks.PreToolUse[0].matcher 'Bash(' is not a valid regular expression",
        ),
    ],
)
def test_a_malformed_settings_file_names_the_file_and_the_problem(
    space: Workspace, text: str, problem: str
) -> None:
    path = space.ws / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(SettingsError) as caught:
        load_settings(str(space.ws))
    assert caught.value.path == str(path)
    assert caught.value.problem.startswith(problem), caught.value.problem


def test_an_empty_settings_file_is_no_settings(space: Workspace) -> None:
    (space.ws / ".claude").mkdir()
    (space.ws / ".claude" / "settings.json").write_text("\n")
    assert load_settings(str(space.ws)).allow == ()


def test_a_missing_settings_argument_is_an_error(space: Workspace) -> None:
    with pytest.raises(SettingsError, match="no such file"):
        load_settings(str(space.ws), ["nope.json"])


@pytest.mark.parametrize("rule", ["Bash(", "Bash(x)y", "(x)", "Ba sh"])
def test_rules_that_cannot_be_read(rule: str) -> None:
    with pytest.raises(RuleError):
        parse_rule(rule, "s.json", base_dir="/", workspace="/", home="/")


def test_rule_names_cover_aliases_related_tools_and_mcp_servers() -> None:
    def names(rule: str, tool: str, aliases: tuple[str, ...] = ()) -> bool:
        parsed = parse_rule(rule, "s.json", base_dir="/", workspace="/", home="/")
        return parsed.names(tool, aliases)

    assert names("Read", "Grep") and names("Read", "Glob") and not names("Read", "Edit")
    assert names("Edit", "Write") and not names("Write", "Edit")
    assert names("FileRead", "Read", ("FileRead",))
    assert names("mcp__github", "mcp__github__create_issue")
    assert not names("mcp__github", "mcp__githubx__create_issue")
    assert names("mcp__github__*", "mcp__github__create_issue")
    assert names("mcp__github__create_issue", "mcp__github__create_issue")
    assert not names("mcp__github__create_issue", "mcp__github__delete_repo")
    assert not names("Bash", "BashOutput")


def run_cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "stdio_executor", *args],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )


def test_the_daemon_refuses_to_start_on_a_bad_settings_file(space: Workspace) -> None:
    path = space.ws / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"permissions": {"allow": ["Bash(npm run test:*)", 7]}}')
    done = run_cli(space.ws)
    assert done.returncode == 2
    assert done.stdout == b""  # no ready line
    assert done.stderr.decode() == (
        f"stdio-executor: bad settings: {path}: permissions.allow[1] must be a string, "
        "not a number\n"
    )


def test_the_daemon_refuses_a_settings_argument_that_is_not_json(space: Workspace) -> None:
    bad = space.root / "bad.json"
    bad.write_text('{"permissions": {"allow": ["Bash"],}}')
    done = run_cli(space.ws, "--settings", str(bad))
    assert done.returncode == 2 and done.stdout == b""
    assert f"{bad}: is not valid JSON" in done.stderr.decode()
    assert "line 1 column" in done.stderr.decode()
