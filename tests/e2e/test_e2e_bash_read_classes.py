"""Read deny rules against Bash, by class of spelling, through the real daemon.

``tests/e2e/test_e2e_bash_reads.py`` holds the first spellings; this file enumerates the
classes they belong to (docs/permissions.md, "Bash reads"), each with spellings invented
beyond the obvious one:

- an input redirection reads its file whatever the program, and with no program at all
  (a group, a loop, ``$(<file)``);
- every program reads its operands unless it only looks at names (``ls``, ``find``,
  ``stat``, ``rm``): programs nobody listed (``iconv``, ``look``, ``openssl``) included,
  and names written inside code or option values (``python3 -c 'open(".env")'``,
  ``curl -F f=@.env``, ``git show HEAD:.env``);
- a program that may descend into a directory (``grep -r``, ``rg``, ``tar``, ``cp -r``,
  ``zip -r``, ``diff -r``, ``find -exec``, an unknown program) reads every file below it;
- ``xargs``/``parallel`` read files named on standard input: only known at run time;
- ``cd``/``pushd`` inside the line move where later operands lead;
- git prints what it stores (``git log -p``, ``git archive``) when a denied file is
  tracked.

The OS sandbox is off: the parser is the only line here (with it on, the kernel also masks
the files; ``tests/e2e/test_e2e_sandbox.py``). The proof is the secret's absence from every
result, and the denial naming the rule. One daemon per class, one turn per spelling.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from daemon_harness import run_daemon, tool_use

DENIED = "s3cr3t-denied"
RULES = ["Read(./secrets/**)", "Read(**/.env)"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "secrets" / "deep").mkdir(parents=True)
    (ws / "in.txt").write_text("inside\n")
    (ws / "docs" / "a.txt").write_text("inside a\n")
    (ws / ".env").write_text(DENIED + "-env\n")
    (ws / "docs" / ".env").write_text(DENIED + "-docs-env\n")
    (ws / "secrets" / "key.txt").write_text(DENIED + "-key\n")
    (ws / "secrets" / "deep" / "k2.txt").write_text(DENIED + "-k2\n")
    git = ["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "all"], check=True)
    return ws


def _run_each(ws: Path, commands: list[str], mode: str = "bypassPermissions") -> list[str]:
    """Each command in its own turn; what came out of each that should not have."""
    settings = json.dumps({"permissions": {"deny": RULES}})
    args = ("--settings", settings, "--permission-mode", mode, "--sandbox", "off")
    wrong = []
    with run_daemon(ws, "--no-prompt", *args) as d:
        for command, result in zip(commands, d.each_in_its_turn(commands), strict=True):
            text = str(result.content)
            if result.meta.status != "denied" or DENIED in text or "Read(" not in text:
                wrong.append(f"{command!r}: {result.meta.status}: {text[:160]}")
    return wrong


REDIRECTIONS = [
    "tr a a < .env",
    "nc -h < .env",
    'while read -r l; do echo "$l"; done < .env',
    "{ cat; } < .env",
    "(cat) < .env",
    'echo "$(<.env)"',
    "x=$(< secrets/key.txt); echo $x",
    "cat <>.env",
    "read -r x < .env; echo $x",
    "mapfile a < docs/.env; echo ${a[@]}",
    "exec 3<.env; cat <&3",
    "for i in 1; do cat; done < .env",
    "if true; then head -1; fi < secrets/key.txt",
    "rev 0< .env",
]

ANY_PROGRAM = [
    "iconv -f utf8 .env",
    "look s3 .env",
    "split -l1 .env out && cat out*",
    "openssl enc -in .env -a",
    "fmt secrets/key.txt",
    "pr -t .env",
    "comm .env .env",
    "expand secrets/deep/k2.txt",
    "xargs -a .env echo",
    "sqlite3 :memory: '.read .env'",
    "\\cat .env",
    "c''at .env",
    "command cat .env",
    "/usr/bin/tail -n1 .env",
    "vim -es -c '%p' -c 'q!' .env",
    "python3.11 -c 'print(open(\".env\").read())'",
    "python3 -c \"print(open('secrets/key.txt').read())\"",
    'node -e \'console.log(require("fs").readFileSync(".env","utf8"))\'',
    "curl -s -F f=@.env file:///dev/null",
    "wget -q --post-file=.env http://127.0.0.1:9/",
    "docker build --secret id=x,src=.env .",
    "git show HEAD:.env",
    "git show HEAD:secrets/key.txt",
    "git show :docs/.env",
    "git cat-file -p HEAD:.env",
    "sed 'r .env' in.txt",
    "ln .env copy && cat copy",
    # A shell's own option values: the file is read as code (its text in the error).
    "bash --rcfile .env -ic :",
    "bash --init-file secrets/key.txt -i -c :",
    "bash +O extglob --rcfile .env -ic :",
    # Values bash evaluates as code (tests/e2e/test_e2e_bash_evaluated_data.py).
    "b=$(printf 'a[$%s(cat .e%s >&2)]' '' 'nv'); echo $((b))",
]

TREES = [
    "grep -r s3cr3t .",
    "grep -rn s3cr3t",
    "grep -R s3cr3t secrets",
    "grep -d recurse s3cr3t .",
    "grep --recursive s3cr3t docs",
    "egrep -rl s3cr3t",
    "rg s3cr3t",
    "rg -uu --hidden s3cr3t docs",
    "ag s3cr3t",
    "git grep s3cr3t",
    "tar c secrets | tar xO",
    "tar -cf - . | tar -xOf -",
    "zip -qr - secrets | cat",
    "cp -r secrets s2 && cat s2/key.txt",
    "cp -a docs d2; cat d2/.env",
    "rsync -a secrets/ s2/ && cat s2/key.txt",
    "diff -r secrets /dev/null",
    "find . -type f -exec cat {} +",
    "find . -name .env -exec cat {} \\;",
    "find secrets -execdir cat {} \\;",
    "find -exec head {} +",
    "ln -s secrets s2 && cat s2/key.txt",
    "env -C secrets cat key.txt",
    "cat */*",
    "tar cf - * | tar xOf -",
    "git -C secrets show HEAD:secrets/key.txt",
    "git archive HEAD | tar xO",
    "git log -p",
    "git --no-pager log -p -1",
    "git -c core.pager=cat show",
    "git show HEAD",
    "git diff HEAD --",
    # behind a wrapper or a reserved word, the program is still the one that walks
    "nice grep -r s3cr3t",
    "env grep -rn s3cr3t",
    "command grep -r s3cr3t",
    "exec grep -r s3cr3t",
    "time -p grep -r s3cr3t",
    "stdbuf -oL grep -r s3cr3t",
    "nohup grep -r s3cr3t",
    "timeout 5 tar c secrets",
    "if grep -r s3cr3t; then :; fi",
    "while grep -rq s3cr3t && grep -r s3cr3t; do break; done",
    "until ! grep -r s3cr3t; do break; done",
    # long options abbreviated, as GNU getopt accepts them
    "grep --rec s3cr3t .",
    "grep --recur s3cr3t",
    "cp --recur secrets s2 && cat s2/key.txt",
    "grep --dir recurse s3cr3t .",
    "rg --hidd s3cr3t docs",
]

RUN_TIME = [
    "find secrets -type f | xargs cat",
    "ls secrets/* | xargs cat",
    "git ls-files | xargs cat",
    "printf '%s\\n' .env | xargs -I{} head {}",
    "find . | parallel cat",
    "cd $PWD/secrets; cat key.txt",
    "cd -; cat key.txt",
    "popd; cat key.txt",
    # code a shell or an interpreter reads from standard input
    "echo 'cat .env' | bash",
    "printf 'head secrets/key.txt' | sh -s",
    "bash <<< 'cat .env'",
    "python3 <<< 'print(open(\".env\").read())'",
    "sh -s < /dev/null <<< 'cat .env'",
    "python3 - <<'EOF'\nprint(open('.en' + 'v').read())\nEOF",
    "cat <<EOF | perl\nprint `cat .env`;\nEOF",
]

DIRECTORY_CHANGES = [
    "cd secrets && cat key.txt",
    "cd secrets; cat *",
    "cd secrets/deep && cat ../key.txt",
    "pushd secrets >/dev/null; cat key.txt",
    "builtin cd secrets; cat key.txt",
    "cd -P secrets && head key.txt",
    "(cd secrets && head key.txt)",
    "cd ~+/secrets; tail key.txt",
    "cd docs && cat .env",
    "cd docs; cd ../secrets; cat deep/k2.txt",
]


@pytest.mark.parametrize(
    "commands",
    [REDIRECTIONS, ANY_PROGRAM, TREES, DIRECTORY_CHANGES],
    ids=["input-redirections", "any-program", "directory-trees", "directory-changes"],
)
def test_every_spelling_of_a_class_is_denied(ws: Path, commands: list[str]) -> None:
    assert _run_each(ws, commands) == []


def test_files_named_only_at_run_time_ask(ws: Path) -> None:
    """The files come from standard input or a directory only known when the line runs:
    the line asks (``--no-prompt``: denied), naming the rule it could not check."""
    assert _run_each(ws, RUN_TIME) == []


def test_the_rules_hold_in_default_mode_too(ws: Path) -> None:
    picks = [REDIRECTIONS[0], ANY_PROGRAM[0], TREES[0], TREES[9], DIRECTORY_CHANGES[0]]
    assert _run_each(ws, picks, mode="default") == []


STILL_RUN = [
    "ls -la secrets",
    "find . -name '*.txt'",
    "stat .env",
    "rm -f docs/nothing-here",
    "git status --short",
    "git log --oneline",
    "git stash list",
    "grep -rn inside in.txt docs/a.txt",
    "grep inside in.txt",
    "cd docs && cat a.txt",
    "cat in.txt | xargs echo",
    "python3 -c 'print(1 + 1)'",
    "bash -c 'echo hi'",
    "bash < /dev/null",
    "wc -l < in.txt",
    "git rm -q --cached --ignore-unmatch .env",
]


def test_lines_that_read_no_denied_file_still_run(ws: Path) -> None:
    settings = json.dumps({"permissions": {"deny": RULES}})
    args = ("--settings", settings, "--permission-mode", "bypassPermissions", "--sandbox", "off")
    with run_daemon(ws, "--no-prompt", *args) as d:
        results = d.each_in_its_turn(STILL_RUN, back_to=ws)
    wrong = [
        f"{command!r}: {r.meta.status}: {str(r.content)[:160]}"
        for command, r in zip(STILL_RUN, results, strict=True)
        if r.meta.status != "success" or DENIED in str(r.content)
    ]
    assert wrong == []


UNSURE_TREES = [
    "python3 -m compileall -q docs",  # a program not known to read only what it compiles
    "xdg-open docs",
    "env -C secrets cat key.txt",
    "ln -s secrets s2 && cat s2/key.txt",
]


def test_a_directory_given_to_a_program_not_known_either_way_asks(ws: Path) -> None:
    """`ruff check .` reads only sources, `docker build .` sends everything: given a
    directory holding a denied file, a program not known to descend or not asks (it is not
    refused outright as `tar c secrets` is), naming the file it may read."""
    wrong = _run_each(ws, UNSURE_TREES)
    assert wrong == []
    settings = json.dumps({"permissions": {"deny": RULES}})
    args = ("--settings", settings, "--permission-mode", "bypassPermissions", "--sandbox", "off")
    with run_daemon(ws, "--no-prompt", *args) as d:
        d.send(tool_use("u", UNSURE_TREES[0]))
        text = str(d.result("u").content)
    assert "could not be checked against the rule Read(**/.env)" in text, text
    assert "docs is a directory, and the program may read" in text, text


# What the line itself gives git to store, then prints from the store: the index the
# check reads does not have it yet. And files git copies into a message, a config or a
# patch it prints.
STORED_BY_THE_LINE = [
    "git add -A; git diff --cached",
    "git add -A && git show :.env",
    "git add .env && git cat-file -p :.env",
    "git add -f -A && git stash && git stash show -p",
    "git stash -u && git stash show -p --include-untracked",
    "git add -A && git -c user.email=t@t -c user.name=t commit -qm y && git log -p -1",
    "git add secrets && git diff --staged",
    "git add -A && git cat-file --batch-all-objects --batch",
    "git -c user.email=t@t -c user.name=t commit -F .env --allow-empty -q && git log -1",
    "git config -f .env -l",
    "git config --file=secrets/key.txt --list",
    "git interpret-trailers .env",
]


def test_what_the_line_stores_in_git_and_prints_is_denied(ws: Path) -> None:
    git = ["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "rm", "-rq", "--cached", ".env", "docs/.env", "secrets"], check=True)
    subprocess.run([*git, "commit", "-qm", "untrack the secrets"], check=True)
    assert _run_each(ws, STORED_BY_THE_LINE) == []
