"""Where bash evaluates a value as code, and where a line holds a value that could spell
code (``shell._evaluation``, ``rules.data_run_as_code``). Bash itself is the oracle for
the first list: each line must run the command hidden in the value."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stdio_executor.permissions.rules import data_run_as_code
from stdio_executor.permissions.shell import parse

# Each runs `touch M` through a value; bash proves it below.
RUNS_A_VALUE = [
    "b='a[$(touch M)]'; (( b ))",
    "b='a[$(touch M)]'; echo $(( b + 1 ))",
    "b='a[$(touch M)]'; echo $[b]",
    "b='a[$(touch M)]'; let b",
    "b='a[$(touch M)]'; declare -i i; i=b",
    "b='a[$(touch M)]'; local -i 2>/dev/null; typeset -i q=b",
    "b='a[$(touch M)]'; a=(); echo ${a[b]}",
    "b='a[$(touch M)]'; a=(); echo ${#a[b]}",
    "b='a[$(touch M)]'; a=(1 2); echo ${a[@]:b}",
    "b='a[$(touch M)]'; x=abc; echo ${x:0:b}",
    "b='a[$(touch M)]'; [[ b -gt 1 ]]",
    "b='a[$(touch M)]'; [[ 1 -le $b ]]",
    "b='a[$(touch M)]'; for ((i=0; i<b; i++)); do :; done",
    "x='$(touch M)'; echo ${x@P}",
    "b='a[$(touch M)]'; echo ${!b}",
    "b='a[$(touch M)]'; printf -v \"$b\" x",
    "b='a[$(touch M)]'; declare -n r=$b; echo $r",
    "b='a[$(touch M)]'; read \"$b\" <<< x",
    "b='a[$(touch M)]'; [[ -v $b ]]",
    "read b <<< 'a[$(touch M)]'; echo $((b))",
    "b=$(printf 'a[$%s(touch M)]' ''); echo $((b))",
    "printf -v b 'a[$%s(touch M)]' ''; echo $((b))",
    "b=$'a[\\x24(touch M)]'; echo $((b))",
    'b="a[\\$(touch M)]"; echo $((b))',
    # Variables bash evaluates when they are assigned.
    "RANDOM='a[$(touch M)]'",
    "b='a[$(touch M)]'; OPTIND=$b",
    "read SRANDOM <<< 'a[$(touch M)]'",
    "for HISTCMD in 'a[$(touch M)]'; do :; done",
    # The builtin's name spelled as bash still reads it.
    "b='a[$(touch M)]'; l\\et b",
    "b='a[$(touch M)]'; builtin let b",
    "b='a[$(touch M)]'; command let b",
    "b='a[$(touch M)]'; 're'ad \"$b\" <<< x",
]


@pytest.mark.parametrize("line", RUNS_A_VALUE)
def test_every_evaluating_spelling_is_seen(line: str, tmp_path: Path) -> None:
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / "M").exists(), "bash did not run the value: the case proves nothing"
    assert data_run_as_code(line) is not None


NOTHING_EVALUATED = [
    "echo $((1 + 2)) ${a[0]} ${a[@]} ${x:1:2} ${x:-$(date)}",  # only digits evaluated
    "echo '$(touch M)' 'a[$(touch M)]'",  # a value, never evaluated
    "git commit -m 'fix $(x) in a[i]'",
    "i=0; while ((i < 3)); do ((i++)); done",  # evaluated, but no value spells code
    "n=3; echo $((n * 2))",
    "for f in one two; do echo $((${#f} + 1)); done",
    "ls *.py; grep -rn 'x' .",
    "printf '%s\\n' \"$HOME\"",
    "echo $RANDOM $OPTIND '$x'",  # read, not assigned
]


@pytest.mark.parametrize("line", NOTHING_EVALUATED)
def test_lines_without_both_halves_are_left_alone(line: str) -> None:
    assert data_run_as_code(line) is None


@pytest.mark.parametrize(
    ("line", "evaluates", "data"),
    [
        ("(( b ))", True, False),
        ("echo ${!b}", True, False),
        ("let x", True, False),
        ("declare -ia q", True, False),
        ('unset "$n"', True, False),
        ("test -v x", True, False),
        ("echo $(date)", False, True),
        ("read x", False, True),
        ("mapfile -t lines", False, True),
        ("cat *.txt", False, True),
        ("echo $'\\x24'", False, True),
        ("cat <<'E'\n$(x)\nE", False, True),
        ("echo 'a$b'", False, True),
        ("echo hi", False, False),
    ],
)
def test_each_half_by_itself(line: str, evaluates: bool, data: bool) -> None:
    parsed = parse(line)
    assert (parsed.evaluates is not None, parsed.data is not None) == (evaluates, data)


def test_the_halves_meet_across_an_inner_shell() -> None:
    # The value is set by the outer line, evaluated by the inner shell's code.
    assert data_run_as_code("export B='a[$(x)]'; bash -c 'echo $((B))'") is not None
    assert data_run_as_code("B='a[$(x)]' sh -c 'echo $((B))'") is not None
    assert data_run_as_code("bash -c 'i=0; ((i++))'") is None
    # Conservative: the quoted code itself holds a `$`, so it counts as a value that could
    # spell code (docs/permissions.md).
    assert data_run_as_code("bash -c 'echo $((B))'") is not None
