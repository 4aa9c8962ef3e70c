"""Adversarial spellings against the Bash sandbox, through the real daemon.

Each test plays a hostile model (or a hostile repository's contents) trying a way around a
promise in docs/sandbox.md that the plain tests in ``test_e2e_sandbox.py`` do not spell,
and checks the file system, a server on 127.0.0.1 or the daemon itself for what actually
happened. Several attacks span two calls: the first rearranges the workspace, the second
uses what the first left behind (masks and read-only views are set up per call).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProcess, run_daemon, tool_use

from stdio_executor.sandbox.kernel import probe

_SUPPORT = probe()
pytestmark = pytest.mark.skipif(
    not (_SUPPORT.landlock_abi and _SUPPORT.user_namespaces),
    reason=f"no sandbox on this system: {_SUPPORT.problem}",
)
PY = shlex.quote(sys.executable)
SECRET = "hunter2-secret"


def bash(d: DaemonProcess, tool_use_id: str, command: str, **extra: Any) -> tuple[str, bool]:
    d.send(tool_use(tool_use_id, {"command": command, **extra}))
    result = d.result(tool_use_id)
    assert isinstance(result.content, str)
    return result.content, result.is_error


def _git_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "hooks").mkdir(exist_ok=True)


def _git_config(root: Path, key: str) -> str:
    """What a later ``git`` in the workspace (run by the user, outside any sandbox) reads."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root / "nohome")}
    out = subprocess.run(
        ["git", "-C", str(root), "config", "--get", key],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return out.stdout.strip()


# ------------------------------------------------------------------ control files


# Each spelling tries to leave `core.fsmonitor = evil` (or a hook) where the user's next
# `git status` would run it.
_CONTROL_WRITES = {
    "tee": "echo '[core]\n\tfsmonitor = evil' | tee -a .git/config",
    "dd": "printf '[core]\\n\\tfsmonitor = evil\\n' | dd of=.git/config conv=notrunc",
    "sed-i": "sed -i 's/^\\[core\\]/[core]\\n\\tfsmonitor = evil/' .git/config",
    "python": f"{PY} -c \"open('.git/config','a').write('[core]\\n\\tfsmonitor = evil\\n')\"",
    "cp": "printf '[core]\\n\\tfsmonitor = evil\\n' > x.cfg; cp x.cfg .git/config",
    "rename-over": "printf '[core]\\n\\tfsmonitor = evil\\n' > x.cfg; mv -f x.cfg .git/config",
    "new-hook": "printf '#!/bin/sh\\necho evil\\n' > .git/hooks/pre-commit",
    "symlink-then-write": "ln -s .git/config link.cfg; echo '[core] fsmonitor = evil' >> link.cfg",
    "proc-self-root": "echo '[core] fsmonitor = evil' >> /proc/self/root$PWD/.git/config",
    "proc-self-cwd": "echo '[core] fsmonitor = evil' >> /proc/self/cwd/.git/config",
    "hard-link": "ln .git/config hl.cfg && echo '[core] fsmonitor = evil' >> hl.cfg",
    "replace-git-dir": (
        "mv .git .git-old; mkdir .git && cp -r .git-old/. .git/; "
        "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config"
    ),
    "rename-git-dir-then-back": (
        "cp -r .git .git-new; printf '[core]\\n\\tfsmonitor = evil\\n' >> .git-new/config; "
        "mv .git .git-old; mv .git-new .git"
    ),
    "rmdir-hooks": "rm -rf .git/hooks; mkdir .git/hooks; echo evil > .git/hooks/pre-commit",
    "unshare-umount": (
        "unshare -Urm sh -c 'umount .git/config; echo \"[core] fsmonitor = evil\" >> .git/config'"
    ),
    "mount-over": "mkdir -p m; unshare -Urm sh -c 'mount --bind m .git'",
}


@pytest.mark.parametrize("spelling", sorted(_CONTROL_WRITES))
def test_git_control_files_stay_read_only_whatever_the_spelling(
    tmp_path: Path, spelling: str
) -> None:
    _git_repo(tmp_path)
    with run_daemon(tmp_path) as d:
        bash(d, "a", _CONTROL_WRITES[spelling] + "; true")
        bash(
            d,
            "b",
            "echo '[core] fsmonitor = evil2' >> .git/config; "
            "echo x > .git/hooks/post-checkout; true",
        )
    assert _git_config(tmp_path, "core.fsmonitor") == ""
    hooks = tmp_path / ".git" / "hooks"
    assert not (hooks / "pre-commit").exists() and not (hooks / "post-checkout").exists()


@pytest.mark.xfail(
    strict=True,
    reason="documented gap: a new file directly in .git (commondir) cannot be refused "
    "without making .git read-only, which would break git itself",
)
def test_a_planted_commondir_cannot_redirect_git_config(tmp_path: Path) -> None:
    _git_repo(tmp_path)
    with run_daemon(tmp_path) as d:
        bash(
            d,
            "a",
            "mkdir -p evil && cp -r .git/. evil/ && "
            "printf '[core]\\n\\tfsmonitor = evil\\n' >> evil/config && "
            "echo ../evil > .git/commondir; true",
        )
    assert _git_config(tmp_path, "core.fsmonitor") == ""


def test_a_worktree_git_file_stays_read_only(tmp_path: Path) -> None:
    """In a linked worktree ``.git`` is a file naming the git dir: rewriting it points git
    at a config of the command's choosing."""
    main = tmp_path / "main"
    main.mkdir()
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(
        ["git", "-C", str(main), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env
    )
    ws = tmp_path / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(ws)], check=True)
    before = (ws / ".git").read_text()
    with run_daemon(ws) as d:
        bash(
            d,
            "a",
            "mkdir -p evil && git init -q evil && "
            "printf '[core]\\n\\tfsmonitor = evil\\n' >> evil/.git/config; "
            'echo "gitdir: $PWD/evil/.git" > .git; true',
        )
    assert (ws / ".git").read_text() == before
    assert _git_config(ws, "core.fsmonitor") == ""


@pytest.mark.parametrize(
    "spelling",
    [
        "mv .claude .claude-old; mkdir .claude; echo '{}' > .claude/settings.json",
        'echo \'{"mcpServers":{"x":{"command":"evil"}}}\' > m.json; mv -f m.json .mcp.json',
        f"{PY} -c \"import os; os.replace('m.json', '.mcp.json')\"",
        "echo evil >> .bashrc; sed -i 's/^/evil /' .envrc",
    ],
)
def test_claude_mcp_and_shell_files_stay_read_only(tmp_path: Path, spelling: str) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"keep": 1}\n')
    (tmp_path / ".mcp.json").write_text("{}\n")
    (tmp_path / "m.json").write_text('{"evil": 1}\n')
    (tmp_path / ".bashrc").write_text("# rc\n")
    (tmp_path / ".envrc").write_text("# envrc\n")
    with run_daemon(tmp_path) as d:
        bash(d, "a", spelling + "; true")
    assert (tmp_path / ".claude" / "settings.json").read_text() == '{"keep": 1}\n'
    assert (tmp_path / ".mcp.json").read_text() == "{}\n"
    assert (tmp_path / ".bashrc").read_text() == "# rc\n"
    assert (tmp_path / ".envrc").read_text() == "# envrc\n"


# ------------------------------------------------------------------ denied reads


def _deny_config() -> str:
    return json.dumps(
        {
            "permissions": {
                "deny": ["Read(./.env)", "Read(./conf/.env)"],
                "defaultMode": "bypassPermissions",
            },
            "sandbox": {"filesystem": {"denyRead": ["./secrets"]}},
        }
    )


# (first call, second call): the second's output must not show the secret.
_READS = {
    "dotdot": ("true", "cat conf/../.env ../$(basename $PWD)/.env"),
    "proc-self-cwd": ("true", "cat /proc/self/cwd/.env /proc/self/cwd/conf/.env"),
    "symlink-inside": ("ln -s .env l1; ln -s conf l2", "cat l1 l2/.env"),
    "hard-link": ("ln .env h1; ln conf/.env h2", "cat h1 h2"),
    "copy-dir": (
        "cp -r conf c2; cp -r secrets s2; tar cf t.tar conf secrets",
        "cat c2/.env s2/db.txt; tar xOf t.tar",
    ),
    "rename-parent": ("mv conf conf2; mv secrets s3", "cat conf2/.env s3/db.txt"),
    "rename-parent-back": ("mv conf conf2; mkdir conf", "cat conf2/.env"),
    "dd-python": ("true", f"dd if=.env 2>/dev/null; {PY} -c \"print(open('conf/.env').read())\""),
    "umount": (
        "true",
        "unshare -Urm sh -c 'umount .env; umount -l secrets; cat .env secrets/db.txt'",
    ),
    "mask-source": (
        "for f in .spill-sandbox/empty .spill-sandbox/empty.d; do chmod u+w .spill-sandbox $f; "
        "rm -rf $f; done; ln -s $PWD/.env .spill-sandbox/empty; "
        "ln -s $PWD/secrets .spill-sandbox/empty.d",
        "cat .env secrets/db.txt",
    ),
}


@pytest.mark.parametrize("attack", sorted(_READS))
def test_denied_files_stay_unreadable_whatever_the_spelling(tmp_path: Path, attack: str) -> None:
    (tmp_path / ".env").write_text(f"API_KEY={SECRET}\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / ".env").write_text(f"DB={SECRET}\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "db.txt").write_text(f"password={SECRET}\n")
    first, second = _READS[attack]
    with run_daemon(tmp_path, "--settings", _deny_config()) as d:
        # The setup runs from a script file too: spelled out, the permission layer now
        # refuses most of it (`ln .env h1`, `cp -r conf c2` read denied files).
        (tmp_path / "setup.sh").write_text(first + "\n")
        bash(d, "a", "bash setup.sh; true")
        # From a script file the permission layer cannot see the files: the kernel must
        # hold. Spelled out (last: a denied Bash call cancels the rest of its
        # turn), the permission layer may deny it first (Read rules hold for `cat`).
        (tmp_path / "kernel.sh").write_text(second + "\n")
        out, _ = bash(d, "c", "bash kernel.sh; echo done")
        direct, _ = bash(d, "b", second + "; echo done")
    assert SECRET not in direct
    # A swapped mask file makes the call fail rather than run unmasked.
    assert "done" in out or attack == "mask-source"
    assert SECRET not in out
