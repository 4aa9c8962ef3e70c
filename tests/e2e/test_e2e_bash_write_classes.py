"""What a Bash line writes, by class of spelling, through the real daemon.

Two checks judge the files a line writes (docs/permissions.md, "Bash reads" and the
control files): ``Edit(...)``/``Write(...)`` deny rules, in every mode, and the ask for a
control file (``.git/hooks/...``) that no allow rule can skip. Each class below has
spellings beyond the obvious one:

- the working directory changed inside the line (``cd config && echo x > a``, ``pushd``,
  a subshell, ``bash -c "cd config; ..."``);
- names written inside code (``python3 -c 'open("config/a", "w")'``, ``node -e``, ``perl
  -e``) and the commands of ``sh -c``/``bash -c``/``eval`` code;
- a directory written into, the names only known when it runs (``mv x config/``, ``cp -t
  config``, ``tar x -C config``, ``find -exec cp {} config/``, ``xargs cp``, ``env -C``);
- a target only known when the line runs (``> $PWD/config/a``, ``> conf*/a``, a brace),
  and redirections the shell parser cannot read (``1<>config/a``): the line asks.

The OS sandbox is off: the parser is the only line here. The proof is the file on disk.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from daemon_harness import run_daemon


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "config").mkdir(parents=True)
    (ws / "config" / "a").write_text("orig\n")
    (ws / "docs").mkdir()
    (ws / "in.txt").write_text("new\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _untouched(ws: Path) -> bool:
    config = ws / "config"
    hooks = [p.name for p in (ws / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")]
    return (
        sorted(p.name for p in config.iterdir()) == ["a"]
        and (config / "a").read_text() == "orig\n"
        and not hooks
    )


def _run_each(
    ws: Path, commands: list[str], settings: Mapping[str, object], mode: str
) -> list[str]:
    """Each command in its own turn; those that ran or changed a protected file."""
    args = ("--settings", json.dumps(settings), "--permission-mode", mode, "--sandbox", "off")
    wrong = []
    with run_daemon(ws, "--no-prompt", *args) as d:
        for command in commands:
            (result,) = d.each_in_its_turn([command], back_to=ws)
            if result.meta.status != "denied" or not _untouched(ws):
                wrong.append(f"{command!r}: {result.meta.status}: {str(result.content)[:160]}")
    return wrong


DENY = {"permissions": {"deny": ["Edit(./config/**)"]}}

DIRECTORY_CHANGES = [
    "cd config && echo x > a",
    "cd config; cp ../in.txt a",
    "pushd config; touch new",
    "(cd config && rm a)",
    "builtin cd config; echo x >> a",
    "cd docs; cd ../config; truncate -s0 a",
    'bash -c "cd config; echo x > a"',
]

CODE = [
    'python3 -c \'open("config/a","w").write("x")\'',
    'perl -e \'open(F,">config/a"); print F "x"\'',
    'node -e \'require("fs").writeFileSync("config/b","x")\'',
    "sh -c 'echo x > config/a'",
    "eval 'echo x > config/a'",
    "bash -c 'sh -c \"touch config/b\"'",
    "bash -lc 'cd config; echo x > a'",
    "nice sh -c 'cd config && rm a'",
    "env X=1 bash -ec 'cd config; touch b'",
]

DIRECTORIES = [
    "mv in.txt config/",
    "cp -t config in.txt",
    "cp in.txt config",
    "tar cf t.tar in.txt && tar xf t.tar -C config",
    "find . -name in.txt -exec cp {} config/ \\;",
    "echo in.txt | xargs -I{} cp {} config/",
    "env -C config touch new",
    "rsync -a docs/ config/",
]

RUN_TIME = [
    "echo x > $PWD/config/a",
    "echo x > conf*/a",
    "echo x > {config,zz}/a",
    "printf x 1<>config/a",
    "cd $PWD/config && echo x > a",
    "f=config/a; echo x > $f",
    "cp in.txt $(echo config)/a",
    "echo 'echo x > config/a' | bash",
    "bash <<< 'touch config/b'",
    "sh <<'EOF'\necho x > config/a\nEOF",
    "cp --target=config in.txt",
]


@pytest.mark.parametrize(
    "commands",
    [DIRECTORY_CHANGES, CODE, DIRECTORIES, RUN_TIME],
    ids=["directory-changes", "code", "directories", "run-time"],
)
def test_edit_deny_rules_hold_for_every_spelling_of_a_write(ws: Path, commands: list[str]) -> None:
    assert _run_each(ws, commands, DENY, "bypassPermissions") == []


ALLOWED = {
    "permissions": {
        "allow": [f"Bash({p}:*)" for p in ("echo", "python3", "cd", "bash", "touch", "cp", "tar")]
    }
}

CONTROL_FILES = [
    "cd .git/hooks && echo x > pre-commit",
    "cd .git; cd hooks; touch pre-commit",
    "(cd .git/hooks; touch post-checkout)",
    "echo x > $PWD/.git/hooks/pre-commit",
    "echo x > .gi?/hooks/pre-commit",
    'python3 -c \'open(".git/hooks/pre-commit","w").write("x")\'',
    'bash -c "echo x > .git/hooks/pre-commit"',
    "cp in.txt .git/hooks/pre-commit",
    "tar cf t.tar in.txt; tar xf t.tar -C .git/hooks",
]


def test_a_control_file_write_asks_whatever_the_allow_rules(ws: Path) -> None:
    assert _run_each(ws, CONTROL_FILES, ALLOWED, "default") == []


STILL_RUN = [
    "echo x > other.txt",
    "cp in.txt out.txt",
    "mkdir -p build && touch build/x",
    "cd docs && echo x > b.txt",
    'python3 -c \'open("docs/c.txt","w").write("x")\'',
    'git add -A && git -c user.email=t@t -c user.name=t commit -qm "$(echo a message)"',
    "mv out.txt docs/",
]


def test_writes_elsewhere_still_run(ws: Path) -> None:
    args = ("--settings", json.dumps(DENY), "--permission-mode", "bypassPermissions")
    with run_daemon(ws, "--no-prompt", *args, "--sandbox", "off") as d:
        results = d.each_in_its_turn(STILL_RUN, back_to=ws)
    wrong = [
        f"{command!r}: {r.meta.status}: {str(r.content)[:160]}"
        for command, r in zip(STILL_RUN, results, strict=True)
        if r.meta.status != "success"
    ]
    assert wrong == []
    assert (ws / "docs" / "out.txt").exists() and (ws / "build" / "x").exists()
    assert _untouched(ws)


@pytest.fixture
def repo(ws: Path) -> Path:
    """``ws`` as a git repository whose config/a differs from what is committed, with an
    archive, a zip and a patch that each hold a new config/a."""
    git = ["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t"]
    (ws / "config" / "a").write_text("committed\n")
    subprocess.run([*git, "add", "config"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    (ws / "config" / "a").write_text("orig\n")
    stage = ws / "stage"
    (stage / "config").mkdir(parents=True)
    (stage / "config" / "a").write_text("new\n")
    (stage / ".git" / "hooks").mkdir(parents=True)
    (stage / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    subprocess.run(["tar", "cf", str(ws / "t.tar"), "-C", str(stage), "config"], check=True)
    subprocess.run(["tar", "cf", str(ws / "hooks.tar"), "-C", str(stage), ".git"], check=True)
    with zipfile.ZipFile(ws / "z.zip", "w") as z:
        z.write(stage / "config" / "a", "config/a")
    (ws / "p.patch").write_text("--- config/a\n+++ config/a\n@@ -1 +1 @@\n-orig\n+new\n")
    return ws


# Programs that write files the line does not name: an archive's, a patch's, git's.
IMPLICIT = [
    "tar xf t.tar",
    "tar -xf t.tar --overwrite",
    "nice tar --extract -f t.tar",
    "cd docs && tar -C .. -xf ../t.tar",
    "unzip -o z.zip",
    "patch -p0 < p.patch",
    "patch -p0 -i p.patch",
    "git apply p.patch",
    "git reset --hard",
    "git checkout -f HEAD",
    "git stash",
    "git stash -u",
    "git merge --ff-only HEAD",
    "cd docs && git reset --hard",
]


def test_edit_deny_rules_hold_for_files_an_archive_a_patch_or_git_names(repo: Path) -> None:
    assert _run_each(repo, IMPLICIT, DENY, "bypassPermissions") == []


def test_an_archive_or_a_patch_asks_even_where_a_rule_allows_the_program(repo: Path) -> None:
    allowed = {"permissions": {"allow": ["Bash(tar:*)", "Bash(patch:*)", "Bash(git apply:*)"]}}
    commands = ["tar xf hooks.tar", "tar -xf t.tar -C docs", "git apply p.patch"]
    assert _run_each(repo, commands, allowed, "default") == []


def test_listing_an_archive_or_extracting_it_elsewhere_still_runs(repo: Path) -> None:
    commands = [
        "tar tf t.tar",
        "unzip -l z.zip",
        "tar xf t.tar -C docs",
        "git stash list",
        "git checkout -b feature",  # a branch at HEAD: the files stay as they are
        "git switch -c other",
        "git clean -n",
    ]
    args = ("--settings", json.dumps(DENY), "--permission-mode", "bypassPermissions")
    with run_daemon(repo, "--no-prompt", *args, "--sandbox", "off") as d:
        results = d.each_in_its_turn(commands, back_to=repo)
    assert [r.meta.status for r in results] == ["success"] * len(commands)
    assert (repo / "docs" / "config" / "a").read_text() == "new\n"
    assert (repo / "config" / "a").read_text() == "orig\n"
