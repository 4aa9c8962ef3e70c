"""Code that bash runs from a value, and code the line writes before it runs it.

Two ways a Bash line runs a command no parser sees in it:

- Bash evaluates a value as code: an arithmetic expression (`(( ))`, `$(( ))`, `let`,
  `[[ -eq ]]`, a substring offset, a `declare -i` variable) evaluates a variable's value,
  and an array subscript in that value (`a[$(cmd)]`) runs `cmd`; so do `${x@P}`, `${!x}`,
  a nameref and `printf -v` with such a name. `b='a[$(touch M)]'; echo $((b))` runs
  touch. The value may be quoted text, a command's output, input `read` takes in, file
  names from a glob, or the environment of an inner shell.
- The line writes a file, then runs it as a program or a script
  (`echo 'touch M' > s.sh; bash s.sh`, `cp`, `tee`, `dd`, through `env` or a `cd`).

Either way what runs is only known when it runs: a Bash deny rule cannot be checked, nor
can Read or Edit deny rules, so the line asks (denied here, with --no-prompt). The OS
sandbox is off: the parser is the only line. The proof is on disk and in the output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from daemon_harness import run_daemon


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key.txt").write_text("TOPSECRET\n")
    (ws / "config").mkdir()
    (ws / "config" / "a").write_text("orig\n")
    (ws / "f").write_text("a[$(touch M)]\n")
    (ws / "ok.sh").write_text("echo fine\n")
    return ws


def _each(ws: Path, settings: Mapping[str, object], commands: list[str]) -> list[tuple[str, str]]:
    """(status, output) of each command, each in its own turn."""
    args = ("--settings", json.dumps(settings), "--permission-mode", "bypassPermissions")
    with run_daemon(ws, "--no-prompt", *args, "--sandbox", "off") as d:
        results = d.each_in_its_turn(commands, back_to=ws)
    return [(r.meta.status, str(r.content)) for r in results]


TOUCH_DENIED = {"permissions": {"deny": ["Bash(touch:*)"]}}

# Every place bash evaluates a value, fed by every kind of value.
EVALUATED = [
    "b='a[$(touch M)]'; (( b ))",
    "b='a[$(touch M)]'; echo $(( b ))",
    "b='a[$(touch M)]'; echo $[ b ]",
    "b='a[$(touch M)]'; let b",
    "b='a[$(touch M)]'; declare -i i; i=b",
    "b='a[$(touch M)]'; typeset -i q=b",
    "b='a[$(touch M)]'; a=(); echo ${a[b]}",
    "b='a[$(touch M)]'; x=abc; echo ${x:b}",
    "b='a[$(touch M)]'; for ((;b;)); do break; done",
    "b='a[$(touch M)]'; case 1 in $((b))) :;; esac",
    "b='a[$(touch M)]'; [[ b -gt 1 ]]",
    "RANDOM='a[$(touch M)]'",
    "read OPTIND <<< 'a[$(touch M)]'",
    "x='$(touch M)'; echo ${x@P}",
    "b='a[$(touch M)]'; echo ${!b}",
    "b='a[$(touch M)]'; printf -v \"$b\" x",
    "b='a[$(touch M)]'; declare -n r=$b; echo $r",
    "b='a[$(touch M)]'; read \"$b\" <<< x",
    "read b <<< 'a[$(touch M)]'; echo $((b))",
    "for b in 'a[$(touch M)]'; do echo $((b)); done",
    "b=$(printf 'a[$%s(tou%s M)]' '' 'ch'); echo $((b))",
    "printf -v b 'a[$%s(tou%s M)]' '' 'ch'; echo $((b))",
    'b="a[\\$(tou""ch M)]"; echo $((b))',
    "b=c; c='a[$(touch M)]'; echo $((b))",
    "echo $(( $(cat f) ))",
    "b=$(<f); a=(1); echo ${a[b]}",
    "while read b; do echo $((b)); done < f",
    "mkdir -p d && cp f 'd/a[$(touch M)]' && cd d && for b in *; do echo $((b)); done",
    "export B='a[$(touch M)]'; bash -c 'echo $((B))'",
    "B='a[$(touch M)]' bash -c 'echo $((B))'",
    "eval 'b=\"a[\\$(touch M)]\"'; echo $((b))",
]

# A file the line writes, then runs.
WRITTEN_THEN_RUN = [
    "echo 'touch M' > s.sh; bash s.sh",
    "echo 'touch M' > s.sh; . ./s.sh",
    "echo 'touch M' > s.sh; source s.sh",
    "echo 'touch M' > s.sh; chmod +x s.sh; ./s.sh",
    "mkdir -p q; echo 'touch M' > q/s.sh; cd q && sh s.sh",
    "tee s.sh <<< 'touch M' > /dev/null; bash s.sh",
    "printf 'touch M' | dd of=s.sh 2>/dev/null; env bash s.sh",
    "echo 'import os; os.system(\"touch M\")' > s.py; python3 s.py",
    "cp ok.sh s2.sh; sed -i 's/echo fine/touch M/' s2.sh; nice bash s2.sh",
]


@pytest.mark.parametrize(
    "commands", [EVALUATED, WRITTEN_THEN_RUN], ids=["evaluated-values", "written-then-run"]
)
def test_a_bash_deny_rule_holds_for_code_no_parser_sees(ws: Path, commands: list[str]) -> None:
    wrong = []
    for command, (status, output) in zip(commands, _each(ws, TOUCH_DENIED, commands), strict=True):
        ran = any(ws.rglob("M"))
        for marker in ws.rglob("M"):
            marker.unlink()
        if ran or status != "denied":
            wrong.append(f"{command!r}: ran={ran} {status}: {output[:160]}")
    assert wrong == []


STILL_RUN = [
    "echo $((1 + 2))",
    "i=0; while ((i < 3)); do ((i++)); done; echo $i",
    "n=3; echo $((n * 2))",
    "a=(x y); echo ${a[0]} ${a[@]} ${#a[@]}",
    "x=hello; echo ${x:1:2} ${x:-none}",
    "echo '$(touch M)' 'a[$(touch M)]'",
    "for f in one two; do echo $f; done",
    "bash ok.sh",
    "echo fine > out.txt; cat out.txt",
]


def test_arithmetic_and_scripts_without_such_a_value_still_run(ws: Path) -> None:
    results = _each(ws, TOUCH_DENIED, STILL_RUN)
    wrong = [
        f"{command!r}: {status}: {output[:160]}"
        for command, (status, output) in zip(STILL_RUN, results, strict=True)
        if status != "success"
    ]
    assert wrong == []
    assert not any(ws.rglob("M"))
    assert "6" in results[2][1] and "$(touch M)" in results[5][1]


def test_read_and_edit_deny_rules_hold_for_evaluated_values(ws: Path) -> None:
    settings = {"permissions": {"deny": ["Read(./secrets/**)", "Edit(./config/**)"]}}
    commands = [
        "b='a[$(cat secrets/key.txt >&2)]'; echo $((b))",
        "b=$(printf 'a[$%s(cat secr%s/key.txt >&2)]' '' 'ets'); echo ${b@P}",
        "x=$(printf 'a[$%s(cat secr%s/key.txt >&2)]' '' 'ets'); a=(1); echo ${a[x]}",
        "b='a[$(echo x > config/a)]'; echo $((b))",
        "b=$(printf 'a[$%s(echo x > conf%s/a)]' '' 'ig'); let b",
    ]
    results = _each(ws, settings, commands)
    wrong = [
        f"{command!r}: {status}: {output[:160]}"
        for command, (status, output) in zip(commands, results, strict=True)
        if status != "denied" or "TOPSECRET" in output
    ]
    assert wrong == []
    assert (ws / "config" / "a").read_text() == "orig\n"
    assert "may evaluate" in results[0][1]  # the reason names what bash would evaluate
