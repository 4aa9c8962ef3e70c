"""The published input schemas of the built-in tools.

Owns: ``schemas.json`` (generated from the msgspec Structs in ``inputs``, checked in) and
the generator. The Structs are also the validators, so the schema a model is shown is the
one its input is checked against. The daemon reads the JSON file at start-up, which costs
microseconds, instead of generating schemas in every session's start. A test regenerates
them and fails if the checked-in file has drifted.

Regenerate with ``python -m stdio_executor.tools.schemas``.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import msgspec

__all__ = ["generate", "load"]

# os.path, not pathlib: pathlib (with urllib.parse and ipaddress) is ~4 ms before `ready`.
_PATH = os.path.join(os.path.dirname(__file__), "schemas.json")


@functools.cache
def load() -> dict[str, dict[str, Any]]:
    with open(_PATH, "rb") as f:
        result: dict[str, dict[str, Any]] = msgspec.json.decode(f.read())
    return result


def generate() -> dict[str, dict[str, Any]]:
    from .inputs import INPUTS

    return {name: _schema_of(cls) for name, cls in INPUTS.items()}


def _schema_of(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """An API-style schema: ``$ref``s inlined, no titles, keys in a stable order."""
    (schema,), components = msgspec.json.schema_components([cls])
    inlined: dict[str, Any] = _inline(schema, components)
    return inlined


def _inline(node: Any, components: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _inline(components[ref.rsplit("/", 1)[-1]], components)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":  # a map of names to schemas, not a schema itself
            out[key] = {name: _inline(prop, components) for name, prop in value.items()}
        elif key != "title":
            out[key] = _inline(value, components)
    enum = out.get("enum")
    if "type" not in out and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        out["type"] = "string"
    if "type" in out:  # "type" first, as the API's own examples write it
        out = {"type": out.pop("type"), **out}
    return out


def render() -> bytes:
    return msgspec.json.format(msgspec.json.encode(generate()), indent=2) + b"\n"


if __name__ == "__main__":
    with open(_PATH, "wb") as out:
        out.write(render())
