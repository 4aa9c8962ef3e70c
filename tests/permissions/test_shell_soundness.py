"""Whatever an allow rule allows, bash really runs nothing else: checked against bash itself.

Hypothesis builds command lines from shell fragments chosen to confuse a parser (quotes,
escapes, operators, substitutions, comments, newlines). For every line that
``Bash(echo *)`` allows, bash runs it with tracing on (``-x`` prints each simple command
before it runs, substitutions included) and an empty PATH, so no program outside bash can
start; every traced command must be ``echo``. And whenever bash runs an ``rm``, the deny
rule ``Bash(rm:*)`` must match or say it cannot be sure (the call then asks).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stdio_executor.permissions.rules import bash_allowed, bash_first_match, parse_rule
from stdio_executor.permissions.shell import parse

RULE = parse_rule("Bash(echo *)", "test", base_dir="/", workspace="/", home="/")

FRAGMENTS = [
    "echo",
    "echo",
    "echo",
    "a",
    "'b c'",
    '"d e"',
    '"$x"',
    "$x",
    "x=1",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "\n",
    "\\\n",
    "$(",
    ")",
    "`",
    "(",
    "{",
    "}",
    "#",
    "\\",
    "\\;",
    "';'",
    "eval",
    "ls",
    "true",
    ">",
    ">/dev/null",
    "2>&1",
    "*",
    "'",
    '"',
    "$'\\x3b'",
    "<<<",
    "--",
]


ARGS = ["a", "'b c'", '"d e"', "\\;", "';'", "'#'", "x#y", "*", "-n", "'$(ls)'", "\\$x", "--"]
SEPARATORS = [";", " && ", " || ", " | ", "\n", " & ", "; ", " |& "]


@st.composite
def lines(draw: st.DrawFn) -> str:
    """Mostly echo lines a rule should allow, with fragments spliced in anywhere (inside
    quotes, between characters) to break them in every way a parser might miss."""
    segments = draw(st.lists(st.lists(st.sampled_from(ARGS), max_size=3), min_size=1, max_size=3))
    separators = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(segments)))
    line = ""
    for args, separator in zip(segments, separators, strict=False):
        line += " ".join(["echo", *args]) + separator
    line = line.rstrip("; &|\n")
    for fragment in draw(st.lists(st.sampled_from(FRAGMENTS), max_size=2)):
        at = draw(st.integers(0, len(line)))
        line = line[:at] + fragment + line[at:]
    return line


def traced_commands(command: str) -> list[str]:
    with tempfile.TemporaryDirectory() as cwd:  # fresh: earlier lines may have made files
        # A file named `rm` makes the globs `r?`, `[r]m`, `r*` expand to it.
        (Path(cwd) / "rm").write_text("")
        return _traced(command, Path(cwd))


# The only program the traced lines can find: bash (a line hands code to a shell). Not
# `/bin/bash` in the lines themselves: a spliced `*` would make that a glob over the real
# /bin (`/bin/bash*` runs /bin/bashbug, which loops on an editor); `bash*` only globs the
# line's own scratch directory.
_BIN = Path(tempfile.mkdtemp(prefix="soundness-bin-"))
(_BIN / "bash").symlink_to("/bin/bash")
atexit.register(shutil.rmtree, _BIN, True)


def _traced(command: str, cwd: Path) -> list[str]:
    # A line still running after the timeout is killed with all it started, its trace so
    # far kept (what it ran before is what the tests ask about).
    env = {
        "PATH": str(_BIN),
        "PS4": "+ ",
        # SHELLOPTS=xtrace: a bash the line starts (`bash -c`, a here-string fed to bash)
        # traces its commands too.
        "SHELLOPTS": "xtrace",
        "TERM": "dumb",
        "HOME": str(cwd),
    }
    proc = subprocess.Popen(
        ["/bin/bash", "-x", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _, stderr = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, b"", stderr)
    traced = []
    for line in done.stderr.decode(errors="replace").splitlines():
        stripped = line.lstrip("+")
        if stripped != line and stripped.startswith(" "):
            traced.append(stripped.strip())
    return traced


@settings(max_examples=300, deadline=None)
@given(command=lines())
def test_an_allowed_line_runs_only_what_the_rule_names(command: str) -> None:
    used, _ = bash_allowed(command, parse(command), [RULE], lambda simple: False)
    if not used:
        return
    with tempfile.TemporaryDirectory() as cwd:
        for traced in _traced(command, Path(cwd)):
            assert traced == "echo" or traced.startswith("echo "), (command, traced)
        assert os.listdir(cwd) == [], command  # allowed lines write no file


def test_the_fragments_do_produce_allowed_lines() -> None:
    # The property above is only as good as the lines it gets to run.
    samples = ["echo a; echo 'b c'", "echo \\; echo", "echo '#' # x", "(echo a) && { echo; }"]
    for command in samples:
        used, why = bash_allowed(command, parse(command), [RULE], lambda simple: False)
        assert used, (command, why)


DENY = parse_rule("Bash(rm:*)", "test", base_dir="/", workspace="/", home="/")
RM_FRAGMENTS = [
    "rm x",
    "r'm' x",
    '"r"m',
    "\\rm",
    "r\\m",
    "$(rm)",
    "`rm`",
    "eval rm",
    "eval 'rm x'",
    "FOO=1 rm",
    "command rm",
    "exec rm",
    "{ rm; }",
    "(rm)",
    "rm&",
    "!rm",
    "if rm; then :; fi",
    "f() { rm; }; f",
    "${x:-$(rm)}",
    "<(rm)",
    "time rm",
    "r${x}m",
    "rm$x",
    "'r'\"m\"",
    "\\\nrm",
    "$(echo rm)",
    "rm<x",
    "x=1 rm",
    "nohup rm",
    "xargs rm",
    "builtin eval rm",
    "[ 1 ] && rm",
    "case a in a) rm;; esac",
    # issue 11: expansion in the command word, code handed to a shell
    "{rm,x}",
    "{r,}m",
    "r\\\nm",
    "r\\\nm x",
    "r?",
    "[r]m x",
    "r*",
    "trap rm EXIT",
    "trap 'rm x' EXIT",
    "source <(echo rm)",
    ". <(echo rm x)",
    "bash -c rm",
    "bash <<< rm",
    "bash <<< 'rm x'",
    "echo rm | bash",
    "eval r\\m",
    "shopt -s expand_aliases; alias ls=rm\nls",
    "${x:-r}m",
]


@st.composite
def rm_lines(draw: st.DrawFn) -> str:
    line = draw(lines())
    for fragment in draw(st.lists(st.sampled_from(RM_FRAGMENTS), min_size=1, max_size=2)):
        at = draw(st.integers(0, len(line)))
        line = line[:at] + fragment + line[at:]
    return line


@settings(max_examples=300, deadline=None)
@given(command=rm_lines())
def test_a_deny_rule_catches_every_rm_bash_runs(command: str) -> None:
    ran_rm = any(traced == "rm" or traced.startswith("rm ") for traced in traced_commands(command))
    if not ran_rm:
        return
    rule, unsure = bash_first_match(command, parse(command), [DENY])
    assert rule is not None or unsure is not None, command


@pytest.mark.parametrize("fragment", RM_FRAGMENTS[RM_FRAGMENTS.index("{rm,x}") :])
def test_each_new_spelling_does_run_rm_and_is_caught(fragment: str) -> None:
    """The fragments above are real: bash runs `rm` through each, and the rule sees it."""
    traced = traced_commands(fragment)
    assert any(t == "rm" or t.startswith("rm ") for t in traced), (fragment, traced)
    rule, unsure = bash_first_match(fragment, parse(fragment), [DENY])
    assert rule is not None or unsure is not None, fragment
