"""The published input schemas of the built-in tools.

Owns: ``schemas.json`` (generated from the pydantic models in ``inputs``, checked in) and
the generator. The daemon reads the JSON file at start-up, which costs microseconds; building
the schemas from pydantic would cost ~150 ms of every session's start. A test regenerates
them and fails if the checked-in file has drifted.

Regenerate with ``python -m stdio_executor.tools.schemas``.
"""

from __future__ import annotations

import functools
import pathlib
from typing import Any

import msgspec

__all__ = ["generate", "load"]

_PATH = pathlib.Path(__file__).with_name("schemas.json")


@functools.cache
def load() -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = msgspec.json.decode(_PATH.read_bytes())
    return result


def generate() -> dict[str, dict[str, Any]]:
    from .inputs import MODELS

    return {name: _clean(model.model_json_schema(by_alias=True)) for name, model in MODELS.items()}


def _clean(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """API-style schema: no pydantic titles, nullable optionals shown as their plain type,
    nested models written in place (no ``$defs``)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    props: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        items = prop.get("items")
        if isinstance(items, dict) and "$ref" in items:
            prop["items"] = _clean(defs[items["$ref"].rsplit("/", 1)[-1]], defs)
        any_of = prop.pop("anyOf", None)
        if any_of is not None:
            kinds = [p for p in any_of if p.get("type") != "null"]
            if len(kinds) == 1:
                prop = {**kinds[0], **prop}
        if prop.get("default") is None:
            prop.pop("default", None)
        props[name] = dict(sorted(prop.items(), key=lambda kv: kv[0] != "type"))
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = schema["required"]
    out["additionalProperties"] = False
    return out


def render() -> bytes:
    return msgspec.json.format(msgspec.json.encode(generate()), indent=2) + b"\n"


if __name__ == "__main__":
    _PATH.write_bytes(render())
