"""Turning a pydantic validation failure into the message the model sees.

Owns: the ``InputValidationError`` wording (SPEC section 4): every bad field, what was
expected and what arrived, so the model can correct all of them in one retry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .base import InputError, describe_value

__all__ = ["format_validation_error", "validate_model"]

M = TypeVar("M", bound=BaseModel)


def validate_model(tool_name: str, model: type[M], raw: Mapping[str, Any]) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InputError(format_validation_error(tool_name, exc)) from None


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "input"
        if err["type"] == "missing":
            lines.append(f"- `{where}`: this required parameter is missing")
        else:
            got = describe_value(err.get("input"))
            lines.append(f"- `{where}`: {err['msg']} (got {got})")
    issues = "issue" if len(lines) == 1 else "issues"
    body = "\n".join(lines)
    return (
        f"<tool_use_error>InputValidationError: {tool_name} failed due to the following "
        f"{issues}:\n{body}</tool_use_error>"
    )
