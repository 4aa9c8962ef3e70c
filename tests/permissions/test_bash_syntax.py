"""Read-only classification of Bash commands, and the "nothing found" exemption."""

from __future__ import annotations

import pytest

from stdio_executor.permissions.bash_syntax import analyze, split_simple_commands


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
