"""Control files: paths whose contents decide what runs next, so writing them escalates.

Owns: which paths count (a repository's ``.git/`` (config, hooks), ``.claude/``,
``.mcp.json``, editor task and settings folders, shell start-up files, tool configs that
name programs, and the script files the settings' hooks run), matched at any depth and
on the resolved path as well as the written one; the hook scripts a settings file names;
and the concrete list of such paths under a workspace and a home directory, for the
sandbox (``control_paths``).
Must not: decide what happens to a write (``policy`` asks; the sandbox denies), or touch
the file system beyond ``os.path`` string work.

Why each: ``.git/config`` sets hooks, ``core.fsmonitor``, pagers and aliases that the next
auto-allowed ``git status`` runs; ``.claude/`` and ``.mcp.json`` hold the next session's
rules, hooks and servers; ``.vscode``/``.idea``/``.devcontainer`` hold tasks and commands an
editor runs; ``.bashrc`` and friends run in every new shell; ``.envrc`` runs under direnv;
``.gitmodules``/``.gitconfig`` carry commands git runs; ``.npmrc``/``.yarnrc*`` pick the
shell and the binary npm and yarn run; ``.ripgreprc`` may hold ``--pre``; ``.husky`` holds
git hooks by convention; ``.ssh`` holds ``authorized_keys`` and ``ProxyCommand``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence

__all__ = ["CONTROL_DIRS", "CONTROL_FILES", "control_paths", "hook_scripts", "protected"]

CONTROL_DIRS = frozenset({".git", ".claude", ".vscode", ".idea", ".husky", ".devcontainer", ".ssh"})
CONTROL_FILES = frozenset(
    {
        ".mcp.json",
        ".claude.json",
        ".envrc",
        ".gitmodules",
        ".gitconfig",
        ".ripgreprc",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".mkshrc",
        ".cshrc",
        ".tcshrc",
        ".inputrc",
    }
)
# Directories under ~/.config whose files a shell or git runs.
_CONFIG_DIRS = frozenset({"git", "fish", "direnv"})


def protected(
    path: str | None, hook_files: frozenset[str] = frozenset(), *, ignore_case: bool = False
) -> str | None:
    """Why writing ``path`` (absolute, normalized) needs approval, or None."""
    if not path:
        return None
    if path in hook_files:
        return f"{path} is a hook script the settings run"
    parts = path.split("/")
    folded = [p.casefold() for p in parts] if ignore_case else parts
    for i, part in enumerate(folded):
        if part in CONTROL_DIRS:
            shown = "/".join(parts[: i + 1])
            return f"{path} is inside {parts[i]}/ ({shown}), which controls what runs next"
        if part == ".config" and i + 1 < len(folded) and folded[i + 1] in _CONFIG_DIRS:
            return f"{path} is a {parts[i + 1]} configuration file"
    if folded[-1] in CONTROL_FILES:
        return f"{path} is {parts[-1]}, which controls what runs next"
    return None


def hook_scripts(commands: Iterable[str], workspace: str) -> frozenset[str]:
    """The files that hook commands run: words of each command that look like paths
    (``"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh``, ``./scripts/check.py``), resolved
    against the workspace."""
    found: set[str] = set()
    for command in commands:
        text = command.replace("${CLAUDE_PROJECT_DIR}", workspace).replace(
            "$CLAUDE_PROJECT_DIR", workspace
        )
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        for word in words:
            if "/" not in word or word.startswith("-") or "$" in word:
                continue
            path = os.path.normpath(os.path.join(workspace, os.path.expanduser(word)))
            if path.startswith(("/bin/", "/usr/", "/sbin/")):
                continue  # the interpreter, not the script
            found.add(path)
    return frozenset(found)


def control_paths(
    workspace: str, home: str, hook_files: Sequence[str] = (), *, roots: Sequence[str] = ()
) -> list[str]:
    """Concrete control paths under the workspace (and any other roots) and the home
    directory, existing or not: what a sandbox should keep read-only."""
    paths: list[str] = []
    for root in (workspace, *roots, home):
        paths.extend(os.path.join(root, name) for name in sorted(CONTROL_DIRS))
        paths.extend(os.path.join(root, name) for name in sorted(CONTROL_FILES))
    paths.extend(os.path.join(home, ".config", name) for name in sorted(_CONFIG_DIRS))
    paths.extend(hook_files)
    return list(dict.fromkeys(os.path.normpath(p) for p in paths))
