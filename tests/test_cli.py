"""The command line explains itself: subcommands through real subparsers, every option with
help and default, the environment listed, completion scripts for bash and zsh, and a daemon
start-up that loads none of it."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stdio_executor import cli

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = REPO_ROOT / "stdio_executor"


def run_cli(
    *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "stdio_executor", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from parsers(child)


def subcommand_names() -> list[str]:
    parser = cli._parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("no subparsers")


def test_help_lists_every_subcommand_and_the_fast_path_knows_them() -> None:
    names = subcommand_names()
    assert list(cli.SUBCOMMANDS) == names
    out = run_cli("--help")
    assert out.returncode == 0
    listed = re.findall(r"^    (\S+)\s", out.stdout, re.MULTILINE)
    assert listed == names
    assert run_cli("help").stdout == out.stdout


@pytest.mark.parametrize("name", cli.SUBCOMMANDS)
def test_help_command_and_dash_dash_help_agree(name: str) -> None:
    via_help = run_cli("help", name)
    via_flag = run_cli(name, "--help")
    assert via_help.returncode == via_flag.returncode == 0
    assert via_help.stdout == via_flag.stdout
    assert via_help.stdout.startswith(f"usage: stdio-executor {name}")


def test_help_of_an_unknown_subcommand_is_a_usage_error() -> None:
    out = run_cli("help", "frobnicate")
    assert out.returncode == 2
    assert "invalid choice: 'frobnicate'" in out.stderr


def test_every_option_has_help_and_says_its_default() -> None:
    for parser in parsers(cli._parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{parser.prog} {action.dest}: no help"
            takes_value = action.option_strings and action.nargs != 0
            if takes_value:
                text = formatter._expand_help(action)
                assert "default" in text, f"{parser.prog} {action.option_strings}: {text!r}"


def test_the_defaults_of_replay_timeout_and_timeline_width_are_shown() -> None:
    assert "(default: 60.0)" in " ".join(run_cli("replay", "--help").stdout.split())
    assert "(default: 960)" in " ".join(run_cli("timeline", "--help").stdout.split())


def _variables_read_by_the_package() -> set[str]:
    pattern = re.compile(
        r"""(?:environ\.get|environ\[|getenv)\(?\s*["']([A-Z][A-Z0-9_]+)["']"""
        r"""|env\.get\(\s*["']([A-Z][A-Z0-9_]+)["']"""
    )
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for match in pattern.finditer(path.read_text("utf-8")):
            found.add(match.group(1) or match.group(2))
    # replay and record extend it for the daemons they start; it means nothing new.
    found.discard("PYTHONPATH")
    return found


def test_help_lists_every_environment_variable_the_package_reads() -> None:
    found = _variables_read_by_the_package()
    # The scan must see the variables we know are read, or it checks nothing.
    assert {"STDIO_EXECUTOR_KILL_GRACE", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT"} <= found
    text = run_cli("--help").stdout
    environment = text[text.index("environment:") :]
    missing = sorted(name for name in found if name not in environment)
    assert not missing, f"not in --help's environment section: {missing}"


def test_the_protocol_reference_lists_every_environment_variable_too() -> None:
    text = (REPO_ROOT / "docs" / "protocol.md").read_text("utf-8")
    start = text.index("Environment (also listed by `--help`")
    table = text[start : text.index("\n## ", start)]
    missing = sorted(name for name in _variables_read_by_the_package() if f"`{name}`" not in table)
    assert not missing, f"not in docs/protocol.md section 3's environment table: {missing}"


def test_daemon_options_work_without_a_subcommand(tmp_path: Path) -> None:
    out = run_cli(
        "--max-concurrency",
        "3",
        "--result-order",
        "barrier",
        "--permission-mode",
        "plan",
        stdin='{"type":"drain"}\n',
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert events[0]["type"] == "ready"
    assert events[0]["limits"]["max_concurrency"] == 3
    assert events[0]["limits"]["result_order"] == "barrier"
    assert events[-1]["type"] == "drained"


def test_a_daemon_option_before_a_subcommand_is_refused() -> None:
    out = run_cli("--workspace", "/tmp", "schema")
    assert out.returncode == 2
    assert "--workspace: daemon options go without a subcommand" in out.stderr


def test_an_unknown_subcommand_is_named_in_the_error() -> None:
    out = run_cli("--max-concurrency", "2", "frobnicate")
    assert out.returncode == 2
    assert "invalid choice: 'frobnicate'" in out.stderr
    assert out.stdout == ""  # no ready line: the daemon did not start


def test_the_daemon_imports_no_subcommand_module(tmp_path: Path) -> None:
    # -X importtime lists every module imported during the whole run, after `ready` too.
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "stdio_executor", "--permission-mode", "plan"],
        input=b'{"type":"drain"}\n',
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.decode().splitlines()}
    assert "stdio_executor.runtime.daemon" in imported  # the listing is real
    for module in (
        "stdio_executor.commands",
        "stdio_executor.fixtures",
        "stdio_executor.timeline",
        "stdio_executor.completion",
        "stdio_executor.pretty",
        "shtab",
        "rich",
    ):
        assert module not in imported, module


def imported_before(tmp_path: Path, *args: str, stdin: bytes) -> dict[str, set[str]]:
    """The modules a daemon had imported when it wrote each kind of event, in order.

    ``-X importtime`` writes a line to stderr as each import statement's module finishes
    loading (``importlib.import_module``, which the tool registry uses, is not listed), and
    the daemon's events go to stdout: with both on one pipe, the pipe's order is the order
    of the writes. The input is in its pipe before the daemon starts, and the pipe stays
    open until the first result: waiting when the event loop starts, as a host's first call
    usually is, so the start-up work kept for idle moments (the spawner, the warm-up of
    every tool) must not go before it.
    """
    read_end, write_end = os.pipe()
    os.write(write_end, stdin)
    daemon = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "stdio_executor", *args],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    os.close(read_end)
    assert daemon.stdout is not None
    seen: set[str] = set()
    at: dict[str, set[str]] = {}
    lines = []
    try:
        for raw in daemon.stdout:
            line = raw.decode()
            lines.append(line)
            if line.startswith("import time:"):
                seen.add(line.rsplit("|", 1)[-1].strip())
            elif line.startswith("{"):
                kind = json.loads(line)["type"]
                at.setdefault(kind, set(seen))
                if kind == "tool_result":
                    os.close(write_end)  # EOF: the daemon finishes and exits
                    write_end = -1
    finally:
        if write_end != -1:
            os.close(write_end)
        returncode = daemon.wait(timeout=60)
    assert returncode == 0, "".join(lines)
    return at


def test_the_first_read_loads_no_module_it_does_not_need(tmp_path: Path) -> None:
    # No settings file, no MCP server, no Bash call: the time to `ready` and to the first
    # result is paid only for what that call uses (bench/NOTES.md, start-up). A module
    # named here may load later, when it is used or when the daemon is idle.
    (tmp_path / "a.txt").write_text("hello\n")
    add = {
        "type": "add_tool",
        "tool_use": {
            "type": "tool_use",
            "id": "r",
            "name": "Read",
            "input": {"file_path": "a.txt"},
        },
    }
    at = imported_before(
        tmp_path,
        "--permission-mode",
        "bypassPermissions",
        "--spill-dir",
        str(tmp_path / "spill"),
        stdin=json.dumps(add).encode() + b"\n",
    )
    ready, result = at["ready"], at["tool_result"]
    assert "stdio_executor.tools.catalog" in ready  # the listing is real
    assert "stdio_executor.tools.files.text" in result  # what Read imports is listed
    for module in (
        "asyncio",
        "anyio",
        "stdio_executor.processes",
        "stdio_executor.permissions.settings",  # only read before `ready` when a file exists
        "stdio_executor.permissions.rules",
    ):
        assert module not in ready, module
    for module in (
        "stdio_executor.tools.mcp",
        "stdio_executor.permissions.wrappers",
        "stdio_executor.permissions.readonly",
        "stdio_executor.permissions.bash_syntax",
        "stdio_executor.hooks.runner",
        "pickle",  # the spawner's wire: it starts when the daemon is first idle
        "tree_sitter",
        "jsonschema",
        "pydantic",
        "difflib",
        "rich",
    ):
        assert module not in result, module


def test_idle_start_up_work_waits_for_the_first_bash_call(tmp_path: Path) -> None:
    # The first Bash call waits on the spawner (and the sandbox); the warm-up thread that
    # loads every tool would take the GIL from it, so the start-up work kept for idle
    # moments waits until no call is running (bench/NOTES.md section 19). The warm-up loads
    # WebFetch, which nothing on a Bash call's path imports.
    add = {
        "type": "add_tool",
        "tool_use": {
            "type": "tool_use",
            "id": "b",
            "name": "Bash",
            "input": {"command": "echo hi"},
        },
    }
    at = imported_before(
        tmp_path,
        "--permission-mode",
        "bypassPermissions",
        "--spill-dir",
        str(tmp_path / "spill"),
        stdin=json.dumps(add).encode() + b"\n",
    )
    result = at["tool_result"]
    assert "stdio_executor.processes" in result  # the call really ran through the spawner
    assert "stdio_executor.tools.web.fetch" not in result


# ------------------------------------------------------------------------------ completion


def bash_complete(script: Path, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words``, as the generated completion computes it."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {script}\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        f'COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}\n'
        "_shtab_stdio_executor\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return sorted(line.strip() for line in out.stdout.splitlines() if line.strip())


def test_bash_completion_completes_subcommands_options_and_choices(tmp_path: Path) -> None:
    out = run_cli("completion", "bash")
    assert out.returncode == 0, out.stderr
    script = tmp_path / "stdio-executor.bash"
    script.write_text(out.stdout)
    assert bash_complete(script, ["stdio-executor", "re"]) == ["record", "replay"]
    assert bash_complete(script, ["stdio-executor", "replay", "--ti"]) == ["--timeout"]
    assert bash_complete(script, ["stdio-executor", "replay", "--ju"]) == ["--junit"]
    assert bash_complete(script, ["stdio-executor", "timeline", "j", "--format", ""]) == [
        "svg",
        "trace",
    ]
    assert "acceptEdits" in bash_complete(script, ["stdio-executor", "--permission-mode", ""])
    assert bash_complete(script, ["stdio-executor", "help", "ti"]) == ["timeline"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_is_a_valid_completion_function(tmp_path: Path) -> None:
    out = run_cli("completion", "zsh")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("#compdef stdio-executor")
    script = tmp_path / "_stdio-executor"
    script.write_text(out.stdout)
    syntax = subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=30)
    assert syntax.returncode == 0, syntax.stderr
    # Loaded by compinit from fpath, as the install line in `completion --help` sets it up.
    loaded = subprocess.run(
        [
            "zsh",
            "-f",
            "-c",
            f"fpath=({tmp_path} $fpath); autoload -Uz compinit; compinit -u -D; "
            "print -r -- ${_comps[stdio-executor]}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert loaded.stdout.strip() == "_stdio-executor", loaded.stderr
    for name in cli.SUBCOMMANDS:
        assert name in out.stdout
