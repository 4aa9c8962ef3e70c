"""Writes to control files ask in every mode but bypassPermissions (issue 11, class 3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from permission_harness import Workspace, workspace

from stdio_executor.permissions.protected import control_paths, hook_scripts, protected


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    w = next(workspace(tmp_path))
    (w.ws / ".git" / "hooks").mkdir(parents=True)
    (w.ws / ".git" / "config").write_text("[core]\n")
    (w.ws / "src").mkdir()
    yield w
    w.close()


CONTROL = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".git/info/attributes",
    "./.git/HEAD",
    "src/../.git/config",
    "sub/repo/.git/config",
    ".claude/settings.local.json",
    ".claude/settings.json",
    ".claude/hooks/new.sh",
    ".claude/commands/x.md",
    ".mcp.json",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".idea/workspace.xml",
    ".devcontainer/devcontainer.json",
    ".husky/pre-commit",
    ".envrc",
    ".bashrc",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".bash_profile",
    ".gitmodules",
    ".gitconfig",
    ".ripgreprc",
    ".npmrc",
    ".yarnrc.yml",
    "scripts/check.sh",  # named by a hook in the settings below
]
SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "bash ./scripts/check.sh --fast"}],
            }
        ]
    }
}


@pytest.mark.parametrize("path", CONTROL)
@pytest.mark.parametrize("tool", ["Write", "Edit"])
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk", "plan", "bypassPermissions"])
def test_control_files(space: Workspace, path: str, tool: str, mode: str) -> None:
    gate = space.gate(SETTINGS, mode=mode)
    tool_input = (
        {"file_path": path, "content": "x"}
        if tool == "Write"
        else {"file_path": path, "old_string": "a", "new_string": "b"}
    )
    decision = space.decide(gate, tool, tool_input)
    expected = {
        "default": "ask",
        "acceptEdits": "ask",
        "dontAsk": "deny",
        "plan": "deny",
        "bypassPermissions": "allow",
    }[mode]
    assert decision.kind == expected, (path, mode, decision)
    if mode in ("default", "acceptEdits"):
        assert decision.firm  # a hook's allow does not skip it either


def test_a_symlink_into_git_is_caught(space: Workspace) -> None:
    (space.ws / "innocent").symlink_to(space.ws / ".git" / "config")
    gate = space.gate({}, mode="acceptEdits")
    decision = space.decide(gate, "Write", {"file_path": "innocent", "content": "x"})
    assert decision.kind == "ask"


@pytest.mark.parametrize(
    "path", ["src/app.py", "README.md", "gitignore.txt", "docs/.gitkeep", ".github/ci.yml"]
)
def test_ordinary_files_are_accepted(space: Workspace, path: str) -> None:
    gate = space.gate(SETTINGS, mode="acceptEdits")
    decision = space.decide(gate, "Write", {"file_path": path, "content": "x"})
    assert decision.kind == "allow", path


def test_a_specific_allow_rule_is_a_grant_a_wildcard_is_not(space: Workspace) -> None:
    gate = space.gate({"permissions": {"allow": ["Edit(.husky/**)", "Edit(**)"]}})
    call = {"file_path": ".husky/pre-commit", "content": "x"}
    assert space.decide(gate, "Write", call).kind == "allow"
    other = {"file_path": ".git/hooks/pre-commit", "content": "x"}
    assert space.decide(gate, "Write", other).kind == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "cp evil .git/hooks/pre-commit",
        "cp -f evil ./.git/hooks/post-checkout",
        "mv x .git/config",
        "tee .claude/settings.local.json < x",
        "sed -i s/a/b/ .git/config",
        "ln -sf /tmp/x .envrc",
        "install -m 755 x .git/hooks/pre-push",
        "cp x .bashrc",
        "dd if=x of=.git/config",
        "cp --target-directory=.git/hooks x",
        "git config core.fsmonitor 'rm -rf ~'",
        "git config --local alias.st '!sh'",
        "git -C . config core.pager evil",
        "cd .git && cp ../x config",
    ],
)
def test_commands_that_write_control_files_ask(space: Workspace, command: str) -> None:
    allow = ["Bash(cp:*)", "Bash(mv:*)", "Bash(tee:*)", "Bash(sed:*)", "Bash(ln:*)"]
    allow += ["Bash(install:*)", "Bash(dd:*)", "Bash(git config:*)", "Bash(git -C . config:*)"]
    allow += ["Bash(cd:*)"]
    for mode in ("default", "acceptEdits"):
        gate = space.gate({"permissions": {"allow": allow}}, mode=mode)
        decision = space.decide(gate, "Bash", {"command": command})
        assert decision.kind == "ask" and decision.firm, (command, mode, decision)
    gate = space.gate({"permissions": {"allow": allow}}, mode="bypassPermissions")
    assert space.decide(gate, "Bash", {"command": command}).kind == "allow"


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("cp a src/b", True),
        ("git config --get user.name", True),
        ("git config --list", True),
        ("cat .git/config", True),
        ("git status", True),
        ("ls .claude", True),
    ],
)
def test_ordinary_commands_still_run(space: Workspace, command: str, allowed: bool) -> None:
    gate = space.gate({"permissions": {"allow": ["Bash(cp:*)", "Bash(git config:*)"]}})
    assert (space.decide(gate, "Bash", {"command": command}).kind == "allow") is allowed


def test_redirects_into_control_files_ask_even_when_a_hook_would_allow(space: Workspace) -> None:
    gate = space.gate(SETTINGS, mode="acceptEdits")  # a Bash hook could answer "allow"
    for command in ("echo x > .git/config", "printf x >> .bashrc", "cat a 1> .mcp.json"):
        decision = space.decide(gate, "Bash", {"command": command})
        assert decision.kind == "ask" and decision.firm, command


def test_pure_helpers() -> None:
    assert protected("/w/.git/config") is not None
    assert protected("/w/src/x.py") is None
    assert protected("/W/.GIT/config", ignore_case=True) is not None
    assert protected("/home/u/.config/git/config") is not None
    scripts = hook_scripts(['"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh', "python3 tools/h.py"], "/w")
    assert scripts == {"/w/.claude/hooks/x.sh", "/w/tools/h.py"}
    paths = control_paths("/w", "/home/u", ["/w/tools/h.py"])
    assert "/w/.git" in paths and "/home/u/.bashrc" in paths and "/w/tools/h.py" in paths
