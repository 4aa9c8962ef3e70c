"""Read-only classification of Bash commands, and the "nothing found" exemption."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from stdio_executor.permissions.bash_syntax import MAX_ANALYZED, analyze, split_simple_commands


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "sleep 0.5; echo one",
        "cat a | grep x | wc -l",
        "echo hi >/dev/null 2>&1",
        "git status && git log --oneline -5",
        "(ls; pwd)",
        "{ ls; }",
        'echo "a;b > c" | wc',
        "ls # rm -rf /",
        "grep -r foo . < input.txt",
        "find . -name '*.py'",
        "date +%s",
    ],
)
def test_read_only_commands_may_run_in_parallel(command: str) -> None:
    assert analyze(command).read_only


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > f",
        "echo hi >> f",
        "ls &> out",
        "cd /tmp && ls",
        "rm -rf x",
        "echo $(rm x)",
        "echo `rm x`",
        'echo "$(touch y)"',
        "git push",
        "git -C other status",
        "make && grep x y",
        "find . -delete",
        "find . -exec rm {} ;",
        "ls &",
        "cat <<EOF\nhi\nEOF",
        "sort -o x y",
        "uniq in out",
        "date -s now",
        "FOO=1",
        "FOO=1 ls",
        "PATH=. ls",
        "LD_PRELOAD=/tmp/x.so cat f",
        "echo 'unbalanced",
        "tee f",
        "python -c 'print(1)'",
        "ls | xargs rm",
        "cat <(rm x)",
        "echo hi >(cat)",
    ],
)
def test_anything_that_may_write_or_is_not_understood_runs_alone(command: str) -> None:
    assert not analyze(command).read_only


@pytest.mark.parametrize(
    ("command", "exempt"),
    [
        ("grep foo file", True),
        ("cat f | grep -q foo", True),
        ("rg pattern", True),
        ("diff a b", True),
        ("cmp a b", True),
        ("test -f x", True),
        ("[ -f x ]", True),
        ("grep foo file && echo found", False),
        ("make; grep x y", False),
        ("ls nothing", False),
        ("grep foo f | wc -l", False),
    ],
)
def test_exit_1_means_nothing_found_only_for_a_pipeline_ending_in_a_search(
    command: str, exempt: bool
) -> None:
    assert analyze(command).exit_1_is_not_error is exempt


def test_simple_commands_are_split_through_operators() -> None:
    assert split_simple_commands("a x && b | c; (d)") == [["a", "x"], ["b"], ["c"], ["d"]]
    assert split_simple_commands("echo $(x)") is None


# Words bash expands when it runs them (parameters, globs, braces) can become options or
# extra operands: `sort *` in a directory holding a file named `--output=x` writes x, and
# `sort ${X:---output=x}` does with X unset. Each of these must not run unasked.
EXPANSIONS_THAT_MAY_WRITE_OR_RUN = [
    "sort *",
    "sort *.txt",
    "sort ?x",
    "sort [a-z]*",
    "sort {a,b}",
    "sort -k1 *",
    "sort ${X:---output=f}",
    "sort ${X:=--output=f}",
    "sort $X",
    'sort "$X"',
    "sort $X--output=f",
    'sort "${X}--output=f"',
    "sort $'\\x2d-output=f'",
    'sort $"--output=f"',
    "sort $1",
    "sort $@",
    "sort -- $X",
    # invented in the review round
    "sort $[1]",
    "git log $[1]",
    "sort ${!X}",
    "sort $0",
    "sort $-",
    'sort "$X"x',
    "sort x$'\\n'",
    "sort {,--output=y}",
    "sort [-]*",
    "sort ?",
    "sort @(a)",
    "sort *(x)",
    "ls !(x)",
    "date +%s$X",
    "uniq -- *",
    "git diff -- $X",
    'find . -name "$X"',
    "uniq *",
    "uniq src/*",
    "uniq {a,b}",
    "uniq a{1,2}",
    "tree *",
    "rg foo *",
    "rg foo *.py",
    "file *",
    "jq . *",
    "printf *",
    "date +*",
    "date $X",
    "git diff *.py",
    "git log ${X:---output=f}",
    'git log "$X"',
    "git $X",
    "git l*",
    "git *",
    "find . -name *.py",
    "find -- *",
    "find * -print",
    "$X",
    "*",
    "l*",
    "${X:-rm} -rf y",
    "ls; sort *",
    "cat * | sort *",
]


@pytest.mark.parametrize("command", EXPANSIONS_THAT_MAY_WRITE_OR_RUN)
def test_an_expansion_that_could_become_an_option_or_operand_is_not_read_only(
    command: str,
) -> None:
    assert not analyze(command).read_only


# What stays read-only: programs that only print or read whatever options they get, and
# globs that can only expand into operands the command accepts in any number.
EXPANSIONS_THAT_ONLY_READ = [
    "ls *",
    "ls -la *.py",
    "cat src/*.ts",
    "grep -n foo *.py",
    "wc -l src/**/*.rs",
    "head -20 *.md",
    "diff *.txt",
    "du -sh *",
    "echo $HOME",
    'ls "$HOME/x"',
    "cat ${X:-/etc/hostname}",
    "echo {a,b}",
    "test -f $X",
    '[ -n "$X" ]',
    "sort src/*",
    "sort ./*",
    "sort -- *.txt",
    "git diff -- *.py",
    "git log --oneline -- src/*",
    "tree src/*",
    "rg foo src/*.py",
    "find . -name '*.py'",
    "find src/* -name x",
    "echo $",
    "sort a$",
    "sort ~/x",
    "find . -name x -print",
    # invented in the review round
    "sort x{,--output=y}",  # "x" and "x--output=y": operands
    "sort 'a'*",
    "sort \\*",
    'sort "*"',
    "sort <<< $X",
    "jq . -- *",
    "file -- *",
    "wc -l ${X:?--files0-from=/etc/passwd}",
]


@pytest.mark.parametrize("command", EXPANSIONS_THAT_ONLY_READ)
def test_expansions_that_cannot_change_what_runs_stay_read_only(command: str) -> None:
    assert analyze(command).read_only


PLANTED = ["--output=PWN1", "-oPWN2", "--compress-program=sh", "--pre=sh", "-C", "-delete"]


def _hostile(tmp_path: Path) -> Path:
    """A directory whose file names are options, in it and in src/."""
    for folder in (tmp_path, tmp_path / "src"):
        folder.mkdir(exist_ok=True)
        for name in [*PLANTED, "a.txt", "b.txt", "x.py", "y.md", "z.ts", "w.rs"]:
            (folder / name).write_text("touch MARK\n")
    (tmp_path / "home").mkdir()
    return tmp_path


def _run(cwd: Path, command: str) -> set[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd / "home"), "LC_ALL": "C"}
    subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    return {str(p.relative_to(cwd)) for p in cwd.rglob("*")}


@pytest.mark.parametrize("command", EXPANSIONS_THAT_ONLY_READ)
def test_what_stays_read_only_writes_nothing_in_a_hostile_directory(
    tmp_path: Path, command: str
) -> None:
    cwd = _hostile(tmp_path)
    before = {str(p.relative_to(cwd)) for p in cwd.rglob("*")}
    assert _run(cwd, command) == before


def test_a_file_name_is_an_option_to_a_glob(tmp_path: Path) -> None:
    # What the tests above guard against, for real: `sort *` writes a file named by a file.
    (tmp_path / "home").mkdir()
    (tmp_path / "--output=PWN1").write_text("x\n")
    (tmp_path / "a.txt").write_text("y\n")
    assert "PWN1" in _run(tmp_path, "sort *")
    assert "PWN3" in _run(tmp_path, "sort ${X:---output=PWN3}")


def test_long_and_pathological_lines_are_judged_like_short_ones() -> None:
    # Many brackets without a closer are literal; one closer at the very end makes a glob.
    assert analyze("ls " + "[" * 50_000).read_only
    assert not analyze("sort " + "[a" * 20_000 + "]").read_only
    assert analyze("sort x" + "{" * 50_000).read_only
    assert analyze("sort " + "{}" * 20_000 + "{a,b}").read_only  # expands to "{}{}...a" ...
    assert not analyze("sort " + "{}" * 20_000 + " {-ox,a}").read_only
    # Past MAX_ANALYZED a line is not looked at at all: not read-only, whatever it holds.
    assert not analyze("ls " + "a " * MAX_ANALYZED).read_only
    assert split_simple_commands("ls " + "a " * MAX_ANALYZED) is None


def test_a_line_of_plain_words_lexes_as_the_character_lexer_lexes_it() -> None:
    # The fast path for lines of literal words (``_lex``) must give the very tokens the
    # character-by-character lexer gives: every character of its alphabet, at the start, in
    # the middle and at the end of words, blanks of both kinds, and lines that only look
    # plain (one character outside the alphabet sends them the slow way).
    from random import Random

    from stdio_executor.permissions.bash_syntax import _PLAIN_LINE, _lex, _lex_chars

    alphabet = "aZ09_-./=:,+@% \t"
    rng = Random(13)
    lines = ["", " ", "\t", "sleep 0.1", "  git   status\t", "A=1 ls", "-x", "a=b=c", "%+@,:"]
    lines += [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 24))) for _ in range(500)
    ]
    for line in lines:
        assert _PLAIN_LINE.fullmatch(line), line
        assert _lex(line) == _lex_chars(line), line
    for line in ["a#b", "ls ~", "echo $x", "a*", "{ls}", "ls\nrm", "a\\b", "ls>f", "x!", "ls ^"]:
        assert _PLAIN_LINE.fullmatch(line) is None, line
