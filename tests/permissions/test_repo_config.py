"""A repository's own git config cannot make a read-only git command run a program unasked.

The daemon runs for real (``--sandbox off``, so a planted program would really run, and
``--no-prompt``, so what asks is denied); every repository is a real one built with git. Each
planted setting is checked twice: untrusted, the command is denied and the program did not
run; trusted (``--trust-workspace``), the command runs and the program did run, which shows
the planted setting is real and the first check could have failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from stdio_executor.client import Client
from stdio_executor.permissions.repo_config import is_inert

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# Keys that name a program git may run, one per mechanism (is_inert must say no to each),
# and keys a clone, `git lfs install --local`, GitHub's checkout action or a worktree set.
PROGRAM_KEYS = [
    "diff.external",
    "diff.evil.textconv",
    "diff.evil.command",
    "diff.Evil.textconv",
    "filter.evil.clean",
    "filter.evil.smudge",
    "filter.evil.process",
    "merge.evil.driver",
    "gpg.program",
    "gpg.ssh.program",
    "gpg.x509.program",
    "log.showsignature",
    "core.sshcommand",
    "core.askpass",
    "core.editor",
    "core.gitproxy",
    "core.alternaterefscommand",
    "credential.helper",
    "credential.https://example.com.helper",
    "sequence.editor",
    "pager.log",
    "interactive.difffilter",
    "difftool.evil.cmd",
    "mergetool.evil.cmd",
    "trailer.evil.command",
    "remote.origin.uploadpack",
    "remote.origin.receivepack",
    "remote.origin.vcs",
    "submodule.sub.update",
    "uploadpack.packobjectshook",
    "lfs.customtransfer.evil.path",
    "lfs.standalonetransferagent",
    "web.browser",
    "browser.evil.cmd",
    "alias.st",
    "some.future.key",
    "diff",
    "",
]
INERT_KEYS = [
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.fsmonitor",  # outranked by the command-scope core.fsmonitor=false
    "core.pager",  # outranked too
    "core.hookspath",  # outranked too (husky sets it in every JavaScript repository)
    "remote.origin.url",
    "remote.origin.fetch",
    "remote.My.Fork.url",
    "branch.main.remote",
    "branch.feature/x.merge",
    "user.name",
    "user.email",
    "submodule.lib.url",
    "submodule.lib.active",
    "http.https://github.com/.extraheader",
    "lfs.repositoryformatversion",
    "lfs.url",
    "extensions.worktreeconfig",
    "include.path",
    "includeif.gitdir:~/work/.path",
    "diff.renames",
    "log.date",
]


@pytest.mark.parametrize("key", PROGRAM_KEYS)
def test_a_key_that_can_name_a_program_is_not_inert(key: str) -> None:
    assert not is_inert(key)


@pytest.mark.parametrize("key", INERT_KEYS)
def test_everyday_keys_are_inert(key: str) -> None:
    assert is_inert(key)


# --------------------------------------------------------------------- real repositories


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _out(cwd: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "config", "user.email", "t@example.com")
    _git(path, "config", "user.name", "t")
    (path / "a.txt").write_text("one\n")
    _git(path, "add", "a.txt")
    _git(path, "commit", "-qm", "one")
    return path


def _program(marker: Path) -> str:
    """A shell command that leaves ``marker`` behind and passes its input through."""
    return f'sh -c \'touch "{marker}"; cat "$@"\' -'


def _attributes(repo: Path, line: str) -> None:
    (repo / ".gitattributes").write_text(line + "\n")


def plant_clean_filter(repo: Path, marker: Path) -> str:
    _attributes(repo, "* filter=evil")
    _git(repo, "config", "filter.evil.clean", _program(marker))
    (repo / "a.txt").write_text("two\n")
    return "git diff"


def plant_textconv(repo: Path, marker: Path) -> str:
    _attributes(repo, "* diff=evil")
    _git(repo, "config", "diff.evil.textconv", _program(marker))
    return "git log -p -1"


def plant_external_diff(repo: Path, marker: Path) -> str:
    _git(repo, "config", "diff.external", f"sh -c 'touch \"{marker}\"' -")
    (repo / "a.txt").write_text("two\n")
    return "git diff"


def plant_signature_check(repo: Path, marker: Path) -> str:
    _git(repo, "config", "log.showSignature", "true")
    # gpg.program is run as a program, not through a shell.
    script = repo.parent / "fake-gpg"
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\nexit 1\n')
    script.chmod(0o755)
    _git(repo, "config", "gpg.program", str(script))
    # A commit carrying a signature (gpg.program is only run for one).
    head = _out(repo, "rev-parse", "HEAD")
    tree = _out(repo, "rev-parse", "HEAD^{tree}")
    who = "t <t@example.com> 0 +0000"
    signature = "-----BEGIN PGP SIGNATURE-----\n \n xx\n -----END PGP SIGNATURE-----"
    body = (
        f"tree {tree}\nparent {head}\nauthor {who}\ncommitter {who}\ngpgsig {signature}\n\nsigned\n"
    )
    signed = _out(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body)
    _git(repo, "update-ref", "HEAD", signed)
    return "git log -1"


def plant_through_include(repo: Path, marker: Path) -> str:
    # The planted key is in a plain file the repository's config includes.
    _git(repo, "config", "--file", "extra.cfg", "diff.evil.textconv", _program(marker))
    _git(repo, "config", "include.path", "../extra.cfg")
    _attributes(repo, "* diff=evil")
    return "git show"


def plant_worktree_config(repo: Path, marker: Path) -> str:
    _git(repo, "config", "extensions.worktreeConfig", "true")
    _git(repo, "config", "--worktree", "diff.external", f"sh -c 'touch \"{marker}\"' -")
    (repo / "a.txt").write_text("two\n")
    return "git diff"


def plant_in_submodule(repo: Path, marker: Path) -> str:
    # A gitlink the index holds without any .gitmodules: git diff still looks inside it.
    inner = _repo(repo / "inner")
    _attributes(inner, "* diff=evil filter=evil")
    _git(inner, "config", "filter.evil.clean", _program(marker))
    head = _out(inner, "rev-parse", "HEAD")
    _git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},inner")
    _git(repo, "commit", "-qm", "gitlink")
    (inner / "a.txt").write_text("two\n")
    return "git status"


PLANTS: list[Callable[[Path, Path], str]] = [
    plant_clean_filter,
    plant_textconv,
    plant_external_diff,
    plant_signature_check,
    plant_through_include,
    plant_worktree_config,
    plant_in_submodule,
]


def _daemon(repo: Path, command: str, *flags: str) -> dict[str, Any]:
    lines = [
        {
            "type": "add_tool",
            "tool_use": {"id": "g", "name": "Bash", "input": {"command": command}},
        },
        {"type": "drain"},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "--no-prompt", "--sandbox", "off", *flags],
        input="".join(json.dumps(line) + "\n" for line in lines),
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = [e for e in map(json.loads, proc.stdout.splitlines()) if e["type"] == "tool_result"]
    return result  # type: ignore[no-any-return]


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.__name__)
def test_a_planted_program_asks_until_the_workspace_is_trusted(
    tmp_path: Path, plant: Callable[[Path, Path], str]
) -> None:
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    command = plant(repo, marker)

    untrusted = _daemon(repo, command)
    assert untrusted["meta"]["status"] == "denied", untrusted
    assert "this repository's own config" in untrusted["content"]
    assert not marker.exists(), "the planted program ran without asking"

    trusted = _daemon(repo, command, "--trust-workspace")
    assert trusted["meta"]["status"] in ("success", "error"), trusted
    assert marker.exists(), "the planted setting was not real: the check proves nothing"


def test_repository_hooks_never_run_under_a_read_only_git(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    hook.chmod(0o755)
    os.utime(repo / "a.txt", (2_000_000_000, 2_000_000_000))  # the index needs a refresh
    for flags in ((), ("--trust-workspace",)):
        result = _daemon(repo, "git status", *flags)
        assert result["meta"]["status"] == "success", result
        assert not marker.exists(), flags
    # The same git status outside the daemon runs the hook: the check above could fail.
    _git(repo, "status")
    assert marker.exists()


def test_a_cloned_repository_still_reads_without_asking(tmp_path: Path) -> None:
    origin = _repo(tmp_path / "origin")
    _git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    _git(clone, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic x")
    _git(clone, "config", "core.fsmonitor", "true")
    _git(clone, "config", "lfs.repositoryformatversion", "0")
    _git(clone, "config", "core.hooksPath", ".husky/_")
    for command in ("git status", "git log -p -1", "git diff HEAD", "git show --stat"):
        result = _daemon(clone, command)
        assert result["meta"]["status"] == "success", (command, result)


def test_outside_a_repository_and_without_git_nothing_asks(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _daemon(plain, "git status")["meta"]["status"] in ("success", "error")
    assert "own config" not in json.dumps(_daemon(plain, "git status"))
    repo = _repo(tmp_path / "repo")
    plant_external_diff(repo, tmp_path / "ran")
    assert _daemon(repo, "ls")["meta"]["status"] == "success"  # no git: nothing to look at


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_trust_workspace_mid_session_lets_the_next_call_run(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    command = plant_textconv(repo, marker)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    block = {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": command}}
    with anyio.fail_after(60):
        async with Client(["--sandbox", "off"], cwd=repo, env=env) as client:
            before = await client.run_turn([block])
            assert not marker.exists()
            await client.trust_workspace()
            after = await client.run_turn([{**block, "id": "b"}])
    assert before.results[0].meta.status == "denied"  # no permission handler: denied
    assert after.results[0].meta.status == "success"
    assert marker.exists()


@pytest.mark.parametrize(
    "command",
    [
        "git --no-pager log -p -1",
        "git -P show",
        "git log -p -1 | head -5",
        "ls && git show",
        "(git show)",
        "{ git show; }",
        "git show; echo done",
        "git -c core.pager=cat show",
        "git --literal-pathspecs show",
    ],
)
def test_every_spelling_of_a_git_line_is_checked(tmp_path: Path, command: str) -> None:
    # Invented in the review round: git's own options, pipelines, lists, groups.
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    plant_textconv(repo, marker)
    result = _daemon(repo, command)
    assert result["meta"]["status"] == "denied", (command, result)
    assert not marker.exists(), command
