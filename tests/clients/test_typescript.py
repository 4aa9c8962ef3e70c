"""The TypeScript client in the Python suite every helper runs: its generated types are current
with protocol/schema.json (checked without Node: the generator writes the schema's hash into
the file's banner), its event list matches the schema, its docs' commands are run somewhere,
and its own tests pass against this daemon (they run again, with the README snippets
type-checked, by `npm test` in .ci/run)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT = REPO_ROOT / "clients" / "typescript"
SCHEMA = REPO_ROOT / "protocol" / "schema.json"


def test_the_generated_types_are_from_the_current_schema() -> None:
    types = (CLIENT / "src" / "protocol.d.ts").read_text()
    banner = re.search(r"^// schema\.json sha256: ([0-9a-f]{64})$", types, re.MULTILINE)
    assert banner, "protocol.d.ts has no schema hash in its banner"
    assert banner.group(1) == hashlib.sha256(SCHEMA.read_bytes()).hexdigest(), (
        "clients/typescript/src/protocol.d.ts is stale: "
        "run `npm ci && npm run generate` in clients/typescript"
    )


def test_every_message_of_the_schema_has_a_type() -> None:
    types = (CLIENT / "src" / "protocol.d.ts").read_text()
    schema = json.loads(SCHEMA.read_text())
    declared = set(re.findall(r"^export (?:interface|type) (\w+)", types, re.MULTILINE))
    assert set(schema["$defs"]) <= declared
    version = schema["x-protocol-version"]
    assert f"export type ProtocolVersion = {version};" in types
    client = (CLIENT / "src" / "index.js").read_text()
    assert f"export const PROTOCOL_VERSION = {version};" in client


def _event_tags() -> set[str]:
    schema = json.loads(SCHEMA.read_text())
    tags = set()
    for ref in schema["$defs"]["Event"]["anyOf"]:
        type_field = schema["$defs"][ref["$ref"].split("/")[-1]]["properties"]["type"]
        tags.add(type_field.get("const") or type_field["enum"][0])
    return tags


def test_the_client_knows_every_event_of_the_schema() -> None:
    client = (CLIENT / "src" / "index.js").read_text()
    listed = client.split("const KNOWN_EVENTS = new Set([", 1)[1].split("]);", 1)[0]
    assert set(re.findall(r'"(\w+)"', listed)) == _event_tags()


_FENCE = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
_COMMENT = re.compile(r"\s{2,}#.*$")

# The shell commands of the client docs, and where each is run (the file, and text in it).
COVERED = {
    "npm ci": (".ci/run", "npm ci --no-audit --no-fund"),
    "npm run generate": ("clients/typescript/package.json", '"check": "node scripts/generate.mjs'),
    "npm run check": (".ci/run", "npm run check"),
    "npm test": (".ci/run", "npm test"),
    "npm run build": (".ci/run", "npm run build"),
    "node examples/node/host.mjs": ("tests/test_readme.py", '"node examples/node/host.mjs"'),
    'STDIO_EXECUTOR=\'["python3", "-m", "stdio_executor"]\' node examples/node/host.mjs': (
        "tests/examples/test_node_host.py",
        'env["STDIO_EXECUTOR"] = json.dumps([sys.executable, "-m", "stdio_executor"])',
    ),
}


def test_every_shell_command_of_the_client_docs_is_run() -> None:
    docs = [CLIENT / "README.md", REPO_ROOT / "examples" / "node" / "README.md"]
    commands = [
        _COMMENT.sub("", line).strip()
        for doc in docs
        for block in _FENCE.findall(doc.read_text())
        for line in block.splitlines()
        if line.strip()
    ]
    assert commands
    for command in commands:
        assert command in COVERED, f"not run by any test: {command!r}"
        where, proof = COVERED[command]
        assert proof in (REPO_ROOT / where).read_text(), f"{where} does not run {command!r}"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (.ci/run fails)")
def test_the_client_tests_pass_against_this_daemon() -> None:
    # The client's own tests (node --test; they need no npm packages) run here too, so that
    # a daemon change that breaks the TypeScript client fails the suite every helper runs.
    # .ci/run also runs them through `npm test`, with the README snippets type-checked.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["STDIO_EXECUTOR"] = json.dumps([sys.executable, "-m", "stdio_executor"])
    out = subprocess.run(
        ["node", "--test", "--test-reporter=tap", "test/client.test.js"],
        cwd=CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert re.search(r"^# pass [1-9]", out.stdout, re.MULTILINE), out.stdout[-2000:]
    assert re.search(r"^# fail 0$", out.stdout, re.MULTILINE)
