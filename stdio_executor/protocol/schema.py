"""JSON Schema of the wire protocol, generated from the Structs in ``messages``.

Owns: the one function that turns the message types into the published schema document.
The checked-in copy (``protocol/schema.json``) is compared with this output in CI, so hosts in
other languages can generate their types from a file that cannot drift from the code.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .messages import PROTOCOL_VERSION, Command, Event

__all__ = ["protocol_schema", "schema_json"]


def protocol_schema() -> dict[str, Any]:
    (command, event), defs = msgspec.json.schema_components(
        [Command, Event], ref_template="#/$defs/{name}"
    )
    defs["Command"] = command
    defs["Event"] = event
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://stdio-executor.dev/protocol/v{PROTOCOL_VERSION}.json",
        "title": "stdio-executor protocol",
        "description": (
            "NDJSON over stdio. Each line the host writes is a Command; each line the daemon "
            "writes is an Event. Both are tagged unions on `type`."
        ),
        "x-protocol-version": PROTOCOL_VERSION,
        "oneOf": [{"$ref": "#/$defs/Command"}, {"$ref": "#/$defs/Event"}],
        "$defs": dict(sorted(defs.items())),
    }


def schema_json() -> bytes:
    """The schema as stable, indented JSON text (what is checked in)."""
    return msgspec.json.format(msgspec.json.encode(protocol_schema()), indent=2) + b"\n"
