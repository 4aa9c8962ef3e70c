"""The TypeScript client's generated types are current with protocol/schema.json. This runs
without Node: the generator writes the schema's hash into the file's banner, so a schema
change that was not followed by `npm run generate` fails here, in the Python suite every
helper runs. (The client itself is tested by `npm test` in clients/typescript, run by
.ci/run.)"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

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
