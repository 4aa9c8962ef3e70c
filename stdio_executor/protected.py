"""The repository's control files: paths whose change makes something *run* later.

Owns: one list, shared by the permission layer (a write to one of these asks in every mode
but ``bypassPermissions``) and the sandbox (they stay read-only inside it, even under a
writable workspace), so the two can never disagree about what is protected.
Must not: import anything but the standard library; decide anything.

Why these: ``.git/config`` names programs git runs (``core.fsmonitor``, ``core.pager``,
aliases, filters) under the next harmless-looking ``git status``; ``.git/hooks/`` runs on
commit and checkout; ``.claude/`` holds settings, hooks and commands for the next session;
``.mcp.json`` starts servers; shell start-up files run in every new shell; editor folders
hold tasks and extensions settings that run on open.
"""

from __future__ import annotations

__all__ = ["HOME_CONTROL_FILES", "WORKSPACE_CONTROL_PATHS"]

# Relative to the workspace (and to each additional directory).
WORKSPACE_CONTROL_PATHS: tuple[str, ...] = (
    ".git/config",
    ".git/hooks",
    ".git/info/attributes",
    ".gitmodules",
    ".gitconfig",
    ".claude",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".envrc",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".ripgreprc",
)

# Relative to the home directory: outside the workspace they are read-only in the sandbox
# anyway; listed for the permission layer and for a workspace that *is* the home directory.
HOME_CONTROL_FILES: tuple[str, ...] = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".gitconfig",
    ".config/git",
    ".ssh",
    ".claude",
    ".claude.json",
)
