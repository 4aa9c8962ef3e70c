"""What a read-only Bash line reads, judged like the Read tool, through the real daemon.

Two rules (docs/permissions.md, "Bash reads"), each with the spellings a model would try:

- a read-only line that reads or lists a file outside the workspace asks (``--no-prompt``:
  denied), as Read does and as Claude Code's path check does: absolute paths, ``..``, ``~``,
  a symlink in the workspace that points out, a glob that matches one, an input
  redirection, an option's file value, a walk that follows symlinks;
- ``Read(...)`` deny rules hold for Bash's reading programs (``cat .env``), also without the
  OS sandbox (which masks the files for every program; here it is off to test the rule).

The proof is the secret's absence from the result, not the status alone.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from daemon_harness import run_daemon, tool_use

from stdio_executor.protocol import Drained

SECRET = "s3cr3t-outside"
DENIED = "s3cr3t-denied"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET + "\n")
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "in.txt").write_text("inside\n")
    (ws / "docs" / "a.txt").write_text("inside a\n")
    os.symlink(tmp_path / "outside" / "secret.txt", ws / "docs" / "link.txt")
    os.symlink("../../outside/secret.txt", ws / "docs" / "rel")
    os.symlink(tmp_path / "outside", ws / "up")
    (ws / ".env").write_text(DENIED + "\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.txt").write_text(DENIED + "\n")
    os.symlink(".env", ws / "envlink")
    return ws


OUTSIDE = {
    "absolute": "cat {out}/secret.txt",
    "dotdot": "cat ../outside/secret.txt",
    "symlink": "cat docs/link.txt",
    "relative-symlink": "head -n 1 docs/rel",
    "symlinked-dir": "tail up/secret.txt",
    "glob": "cat docs/*",
    "glob-in-linked-dir": "cat up/*.txt",
    "input-redirection": "wc -c < docs/link.txt",
    "option-value": "grep -f docs/link.txt in.txt",
    "long-option-value": "grep --file=docs/link.txt in.txt",
    "recursive-follow": "grep -R s3cr3t .",
    "parent-listing": "ls -la ..",
    "proc-cwd": "cat /proc/self/cwd/../outside/secret.txt",
    "pipeline": "cat in.txt | grep -h s3cr3t - docs/link.txt",
    "diff": "diff in.txt docs/link.txt",
    "strings": "strings docs/rel",
    "tilde-plus": "cat ~+/../outside/secret.txt",
    "tilde-plus-listing": "ls ~+/..",
    "tilde-minus": "cat ~-/secret.txt",
    "tilde-plus-redirection": "wc -c < ~+/docs/link.txt",
}


@pytest.mark.parametrize("spelling", sorted(OUTSIDE))
def test_a_read_only_line_reading_outside_asks(ws: Path, spelling: str) -> None:
    command = OUTSIDE[spelling].format(out=ws.parent / "outside")
    with run_daemon(ws, "--no-prompt", "--sandbox", "off", "--permission-mode", "default") as d:
        d.send(tool_use("r", command))
        result = d.result("r")
    assert result.meta.status == "denied", result.content
    assert SECRET not in str(result.content)


INSIDE = ["cat in.txt docs/a.txt", "grep -rn inside .", "cat docs/a*", "wc -l < in.txt", "ls"]


@pytest.mark.parametrize("command", INSIDE)
def test_a_read_only_line_reading_inside_runs(ws: Path, command: str) -> None:
    with run_daemon(ws, "--no-prompt", "--sandbox", "off", "--permission-mode", "default") as d:
        d.send(tool_use("r", command))
        result = d.result("r")
    assert result.meta.status == "success", result.content


DENIED_READS = {
    "plain": "cat .env",
    "dot-slash": "head ./.env",
    "symlink": "cat envlink",
    "below-a-directory": "cat secrets/key.txt",
    "glob": "cat secret*/*",
    "input-redirection": "cat < .env",
    "proc-cwd": "cat /proc/self/cwd/.env",
    "not-read-only-line": "cat .env > copy.txt",
    "other-reader": "sed -n p secrets/key.txt",
    "tilde-plus": "cat ~+/.env",
    "wrapper-env": "env cat .env",
    "wrapper-timeout": "timeout 5 cat .env",
    "wrapper-xargs": "echo .env | xargs cat .env",
    "rename-away": "mv .env notes.txt && cat notes.txt",
    "archive": "tar cf - .env | tar xOf -",
    "dd": "dd if=.env status=none",
    "compress": "gzip -c .env | zcat",
    "brace": "cat {.env,in.txt}",
    "brace-inside-word": "cat .{env,x}",
    "leading-redirection": "< .env cat",
    "shell-code": "sh -c 'cat .env'",
    "login-shell-code": "bash -lc 'head -1 .env'",
    "eval": "eval cat .env",
    "source": "source .env; env",
    "dot": ". ./.env",
    "interpreter": "perl -pe1 .env",
    "interpreter-operand": "python3 -c 'import sys; print(open(sys.argv[1]).read())' .env",
    "busybox": "busybox cat .env",
    "shell-script-is-the-file": "sh .env",
    "inside-a-substitution": "x=$(cat .env); echo $x",
    "inside-a-quoted-substitution": 'echo "$(head -1 .env)"',
    "process-substitution": "diff <(cat .env) /dev/null",
}


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
@pytest.mark.parametrize("spelling", sorted(DENIED_READS))
def test_read_deny_rules_hold_for_bash(ws: Path, spelling: str, mode: str) -> None:
    settings = json.dumps({"permissions": {"deny": ["Read(./.env)", "Read(./secrets/**)"]}})
    args = ("--settings", settings, "--permission-mode", mode, "--sandbox", "off")
    with run_daemon(ws, "--no-prompt", *args) as d:
        d.send(tool_use("r", DENIED_READS[spelling]))
        result = d.result("r")
    assert result.meta.status == "denied", result.content
    assert "Read(" in str(result.content)  # the rule's denial, not the mode's ask
    assert DENIED not in str(result.content)
    assert not (ws / "copy.txt").exists()


WRITES = {
    "redirection": "echo x > config/a",
    "append": "echo x >> ./config/a",
    "cp": "cp in.txt config/a",
    "sed-in-place": "sed -i s/orig/x/ config/a",
    "tee": "echo x | tee config/a",
    "rm": "rm config/a",
    "new-file-below": "touch config/new",
    "tilde-plus": "echo x > ~+/config/a",
    "symlink": "echo x > cfglink/a",
}


@pytest.mark.parametrize("rule", ["Edit(./config/**)", "Write(./config/**)"])
@pytest.mark.parametrize("spelling", sorted(WRITES))
def test_edit_deny_rules_hold_for_what_bash_visibly_writes(
    ws: Path, spelling: str, rule: str
) -> None:
    (ws / "config").mkdir()
    (ws / "config" / "a").write_text("orig\n")
    os.symlink("config", ws / "cfglink")
    settings = json.dumps({"permissions": {"deny": [rule]}})
    args = ("--settings", settings, "--permission-mode", "bypassPermissions", "--sandbox", "off")
    with run_daemon(ws, *args) as d:
        d.send(tool_use("w", WRITES[spelling]))
        result = d.result("w")
        d.send({"type": "drain"})  # a denied Bash call cancels the rest of its turn
        d.wait_for(lambda e: isinstance(e, Drained))
        d.send(tool_use("ok", "echo fine > elsewhere.txt"))
        assert d.result("ok").meta.status == "success"  # other writes still run
    assert result.meta.status == "denied", result.content
    assert (ws / "config" / "a").read_text() == "orig\n"
    assert not (ws / "config" / "new").exists()


NOT_READS = [
    "cp in.txt .env",  # the destination is written, not read (Edit rules judge that)
    "ls -la secrets",
    "find . -name .env",
    "stat .env",
    "test -f .env && echo present",
    "git rm -q --cached --ignore-unmatch .env",
    "echo $(date) ok",  # a substitution that names no file runs as before
    "cat <<EOF\nhere\nEOF",
]


@pytest.mark.parametrize("command", NOT_READS)
def test_listing_a_denied_file_is_not_reading_it(ws: Path, command: str) -> None:
    """Read rules keep contents from Bash's readers; a listing of names or metadata runs
    (the Glob tool hides denied names, Bash's `ls` is not filtered), and untracking a
    secret (`git rm --cached`) is not refused."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True)  # for `git rm`
    settings = json.dumps({"permissions": {"deny": ["Read(./.env)", "Read(./secrets/**)"]}})
    args = ("--settings", settings, "--permission-mode", "bypassPermissions", "--sandbox", "off")
    with run_daemon(ws, *args) as d:
        d.send(tool_use("r", command))
        result = d.result("r")
    assert result.meta.status == "success", result.content
    assert DENIED not in str(result.content)


UNKNOWN_READS = [
    "cat $(echo .env)",
    "cat `echo .env`",
    "f=.env; cat $f",
    'cat "$HOME/../..$PWD/.env"',
    'eval "$CMD"',
    'sh -c "$X"',
]


@pytest.mark.parametrize("command", UNKNOWN_READS)
def test_a_file_read_only_known_at_run_time_asks_under_read_deny_rules(
    ws: Path, command: str
) -> None:
    """Like a Bash deny rule that cannot be checked: it asks, even in bypassPermissions
    (``--no-prompt``: denied), and never runs unchecked."""
    settings = json.dumps({"permissions": {"deny": ["Read(./.env)"]}})
    args = ("--settings", settings, "--permission-mode", "bypassPermissions", "--sandbox", "off")
    with run_daemon(ws, "--no-prompt", *args) as d:
        d.send(tool_use("r", command))
        result = d.result("r")
    assert result.meta.status == "denied", result.content
    assert "could not be checked against the rule Read(./.env)" in str(result.content)
    assert DENIED not in str(result.content)
