"""Every command the README shows is run here (or, for the few that need a network install or
take long, by the test named for it), so a new user can follow the README as written."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_TRAILING_COMMENT = re.compile(r"\s{2,}#[^'\"]*$")


def readme_commands() -> list[str]:
    """Shell commands of ``sh`` blocks, ``$`` lines of ``console`` blocks, ``python`` and
    ``ts`` blocks."""
    commands: list[str] = []
    for lang, body in _FENCE.findall(README.read_text()):
        if lang in ("python", "ts"):
            commands.append(body)
            continue
        if lang not in ("sh", "console"):
            continue
        pending = ""
        for line in body.splitlines():
            if lang == "console" and not pending:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line + "\n"
                continue
            commands.append(_TRAILING_COMMENT.sub("", pending + line).strip())
            pending = ""
    return commands


# Commands exercised elsewhere: where, and a text that proves it.
COVERED = {
    "pip install -e . && stdio-executor": (".ci/run", "README: pip install -e . && stdio-executor"),
    "pip install -e '.[test]' && pytest": (".ci/run", "README: pip install -e '.[test]' && pytest"),
    "pip install -e '.[test]'": (".ci/run", "pip install -q -e '.[test]'"),
    "stdio-executor replay fixtures/": (
        "tests/fixtures/test_replay.py",
        'cli("replay", "fixtures/")',
    ),
    "python examples/replay_model.py": (
        "tests/examples/test_replay_model.py",
        'str(REPO_ROOT / "examples" / "replay_model.py")',
    ),
}

Check = Callable[[Path, str], None]


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def _check_first_example(cwd: Path, out: str) -> None:
    events = [json.loads(line) for line in _lines(out)]
    assert events[0]["type"] == "ready"
    assert [e["tool_use_id"] for e in events if e["type"] == "tool_result"] == ["a", "b"]
    assert events[-1]["type"] == "drained"


def _check_node(cwd: Path, out: str) -> None:
    assert "drained turn 1: 4 results, 1 errors" in out
    assert out.rstrip().endswith("daemon exited with code 0")


def _check_python_snippet(cwd: Path, out: str) -> None:
    assert _lines(out) == ["[('a', 'success', 'one')]"]


def _check_typescript_snippet(cwd: Path, out: str) -> None:
    assert _lines(out) == ["[ 'a success one' ]"]


def _check_tools(cwd: Path, out: str) -> None:
    tools = json.loads(out)
    assert {"Bash", "Read", "Write", "Edit", "Glob", "Grep"} <= {t["name"] for t in tools}
    assert all(set(t) == {"name", "description", "input_schema"} for t in tools)


def _check_round_trip(cwd: Path, out: str) -> None:
    message = json.loads(out)
    assert message["role"] == "user"
    assert [b["tool_use_id"] for b in message["content"]] == ["toolu_01", "toolu_02", "toolu_03"]
    assert all("meta" not in b and b["is_error"] is False for b in message["content"])


def _check_per_result(cwd: Path, out: str) -> None:
    rows = [json.loads(line) for line in _lines(out)]
    assert [r["id"] for r in rows][:3] == ["scan", "count", "glob"]
    assert {r["status"] for r in rows} == {"success", "error", "sibling_cancelled"}


def _check_journal_inputs(cwd: Path, out: str) -> None:
    commands = [json.loads(line) for line in _lines(out)]
    assert len(commands) == 9 and commands[-1] == {"type": "drain"}


def _check_journal_results(cwd: Path, out: str) -> None:
    rows = [json.loads(line) for line in _lines(out)]
    assert len(rows) == 8 and all(isinstance(r[0], float) for r in rows)


def _check_files(*names: str) -> Check:
    def check(cwd: Path, out: str) -> None:
        for name in names:
            assert (cwd / name).exists(), name

    return check


def _expect(text: str) -> Check:
    def check(cwd: Path, out: str) -> None:
        assert text in out, out

    return check


# Commands run here, in README order, in a scratch copy of the README and examples/.
RUN: dict[str, Check] = {
    "printf": _check_first_example,
    "node examples/node/host.mjs": _check_node,
    'stdio-executor --permission-mode bypassPermissions --workspace "$(mktemp -d)" '
    "--journal demo.journal < examples/demo.ndjson > /dev/null": _check_files("demo.journal"),
    "stdio-executor timeline demo.journal -o timeline.svg": _check_files("timeline.svg"),
    "import anyio": _check_python_snippet,
    'import { Client } from "stdio-executor"': _check_typescript_snippet,
    "stdio-executor record my-fixture": _check_files("my-fixture/expected.ndjson"),
    "stdio-executor replay my-fixture": _expect("1 passed, 0 failed"),
    "stdio-executor </dev/null | jq -c 'select(.type==\"ready\") | .tools'": _check_tools,
    "{ jq -c '.content[]": _check_round_trip,
    '| jq -c \'select(.type=="tool_result") | {id: .tool_use_id': _check_per_result,
    "jq --unbuffered -rj": _expect("tick 1\ntick 2\ntick 3\n"),
    "jq -c 'select(.dir==\"in\") | .msg' demo.journal": _check_journal_inputs,
    'jq -c \'select(.dir=="out" and .msg.type=="tool_result")': _check_journal_results,
}


# Commands that use what an earlier one made run in that one's chain; chains run at once.
CHAINS = {
    "demo.journal": "journal",
    "my-fixture": "record",
}


def _runner_for(command: str) -> str | None:
    matches = [key for key in RUN if key in command]
    assert len(matches) <= 1, f"ambiguous: {command!r} matches {matches}"
    return matches[0] if matches else None


def test_the_first_two_lines_are_the_install_and_test_commands() -> None:
    block = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].startswith("pip install -e . && stdio-executor ")
    assert block[0].split("#")[0].split() == ["pip", "install", "-e", ".", "&&", "stdio-executor"]
    assert block[1].startswith("pip install -e '.[test]' && pytest           # run the tests")


def test_every_readme_command_is_exercised() -> None:
    for command in readme_commands():
        if command in COVERED:
            where, proof = COVERED[command]
            assert proof in (REPO_ROOT / where).read_text(), f"{where} does not run {command!r}"
            continue
        assert _runner_for(command) is not None, f"README command not tested: {command!r}"


def _shims(bin_dir: Path) -> None:
    bin_dir.mkdir()
    for name, target in (
        ("stdio-executor", f'"{sys.executable}" -m stdio_executor'),
        ("python", f'"{sys.executable}"'),
    ):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)


def test_the_readme_commands_work_as_written(tmp_path: Path) -> None:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    shutil.copy(README, tmp_path / "README.md")
    shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples")
    # The TypeScript client where `npm install stdio-executor` would put it (it runs without a
    # build), and where examples/node/host.mjs finds it in a clone.
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "stdio-executor").symlink_to(REPO_ROOT / "clients" / "typescript")
    (tmp_path / "clients").mkdir()
    (tmp_path / "clients" / "typescript").symlink_to(REPO_ROOT / "clients" / "typescript")
    _shims(tmp_path / "bin")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), env["PATH"]])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))

    def run(command: str) -> str:
        key = _runner_for(command)
        assert key is not None
        if key == "import anyio":
            argv = [sys.executable, "-c", command]
        elif key.startswith("import { Client }"):
            # The README's TypeScript is also plain JavaScript (clients/typescript's own tests
            # type-check it with tsc).
            argv = ["node", "--input-type=module", "-e", command]
        else:
            argv = ["bash", "-o", "pipefail", "-c", command]
        out = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, f"{command}\n{out.stdout}\n{out.stderr}"
        RUN[key](tmp_path, out.stdout)
        return key

    chains: dict[str, list[str]] = {}
    for n, command in enumerate(readme_commands()):
        if command in COVERED or _runner_for(command) is None:
            continue
        needs_node = command.startswith(("node ", "import { Client }"))
        if needs_node and shutil.which("node") is None:
            continue
        chain = next((c for text, c in CHAINS.items() if text in command), str(n))
        chains.setdefault(chain, []).append(command)
    with ThreadPoolExecutor(4) as pool:
        done = pool.map(lambda commands: [run(c) for c in commands], chains.values())
        ran = [key for keys in done for key in keys]
    assert len(ran) >= len(RUN) - 2  # all of them (the two node ones only with node)
