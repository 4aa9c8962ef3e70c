"""One input policy, Claude Code's: the advertised schema and the validator are one thing.

The Structs in ``stdio_executor.tools.inputs`` both validate a ``tool_use`` input and
generate the published schema; these tests hold the two together (every advertised key is
accepted, every other key refused) and pin Claude Code's ``InputValidationError`` wording,
over the real daemon for each built-in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from external_harness import drain, run_daemon, tool_use

from stdio_executor.tools import schemas
from stdio_executor.tools.base import InputError
from stdio_executor.tools.inputs import INPUTS, BashInput, GrepInput, ReadInput, parse

HEAD = "<tool_use_error>InputValidationError: "
TAIL = "</tool_use_error>"

# One acceptable value for each JSON Schema type an input advertises.
_SAMPLE: dict[str, Any] = {"string": "xyz", "integer": 1, "number": 1.5, "boolean": True}


def _sample(prop: dict[str, Any]) -> Any:
    if "enum" in prop:
        return prop["enum"][0]
    if prop.get("type") == "array":  # as few items as allowed (MultiEdit needs one edit)
        return [_sample(prop["items"])] * prop.get("minItems", 0)
    if prop.get("type") == "object":
        return {k: _sample(prop["properties"][k]) for k in prop.get("required", [])}
    return _SAMPLE[prop["type"]]


def _refused(tool: str, raw: dict[str, Any]) -> str:
    with pytest.raises(InputError) as caught:
        parse(tool, INPUTS[tool], raw)
    return str(caught.value)


@pytest.mark.parametrize("tool", sorted(INPUTS))
def test_every_advertised_key_is_accepted_and_no_other(tool: str) -> None:
    schema = schemas.load()[tool]
    assert schema["additionalProperties"] is False
    required = {k: _sample(schema["properties"][k]) for k in schema.get("required", [])}
    parse(tool, INPUTS[tool], required)
    for key, prop in schema["properties"].items():
        parse(tool, INPUTS[tool], {**required, key: _sample(prop)})
    message = _refused(tool, {**required, "surely_not_a_key": 1})
    assert message == (
        f"{HEAD}{tool} failed due to the following issue:\n"
        f"An unexpected parameter `surely_not_a_key` was provided{TAIL}"
    )
    for key in schema.get("required", []):
        missing = {k: v for k, v in required.items() if k != key}
        assert f"The required parameter `{key}` is missing" in _refused(tool, missing)


def test_problems_are_listed_in_claude_codes_order_and_all_at_once() -> None:
    message = _refused("Read", {"offset": "ten", "pages": "1", "limit": True})
    assert message == (
        f"{HEAD}Read failed due to the following issues:\n"
        "The required parameter `file_path` is missing\n"
        "An unexpected parameter `pages` was provided\n"
        "The parameter `offset` type is expected as `number` but provided as `string`\n"
        "The parameter `limit` type is expected as `number` but provided as `boolean`"
        f"{TAIL}"
    )


def test_an_optional_key_may_be_left_out_but_not_sent_as_null() -> None:
    assert _refused("Glob", {"pattern": "*", "path": None}) == (
        f"{HEAD}Glob failed due to the following issue:\n"
        f"The parameter `path` type is expected as `string` but provided as `null`{TAIL}"
    )


def test_strings_for_numbers_and_booleans_are_accepted_as_claude_code_accepts_them() -> None:
    bash = parse(
        "Bash", BashInput, {"command": "ls", "timeout": "5000", "run_in_background": "true"}
    )
    assert bash.timeout == 5000 and bash.run_in_background is True
    grep = parse("Grep", GrepInput, {"pattern": "x", "-A": "2", "-i": "false"})
    assert grep.after == 2 and grep.case_insensitive is False
    assert "type is expected as `boolean` but provided as `string`" in _refused(
        "Bash", {"command": "ls", "run_in_background": "yes"}
    )


def test_constraint_problems_name_the_parameter() -> None:
    assert _refused("Grep", {"pattern": "x", "-A": -1}).endswith(
        "The parameter `-A` must be at least 0 (provided -1)" + TAIL
    )
    assert _refused("Grep", {"pattern": "x", "output_mode": "lines"}).endswith(
        "The parameter `output_mode` must be one of `content`, `count`, `files_with_matches` "
        '(provided "lines")' + TAIL
    )
    assert _refused("Bash", {"command": ""}).endswith(
        "The parameter `command` must not be empty" + TAIL
    )
    assert _refused("Read", {"file_path": "a", "offset": 2.5}).endswith(
        "The parameter `offset` must be a whole number (provided 2.5)" + TAIL
    )


def test_keys_that_are_not_python_names_keep_their_wire_names() -> None:
    value = parse("Grep", GrepInput, {"pattern": "x", "-B": 1, "-C": 2, "-n": False, "-i": True})
    assert (value.before, value.around, value.line_numbers, value.case_insensitive) == (
        1,
        2,
        False,
        True,
    )
    assert msgspec.structs.asdict(parse("Read", ReadInput, {"file_path": "a", "offset": -5}))[
        "offset"
    ] == (-5)


# ------------------------------------------------------------------ over the real daemon


def test_the_daemon_refuses_unknown_keys_and_honours_known_ones(tmp_path: Path) -> None:
    (tmp_path / "lines.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (tmp_path / "code.py").write_text("a\nb\nneedle\nc\nd\n")
    with run_daemon(tmp_path) as daemon:
        daemon.send(
            tool_use("bash-sandbox", {"command": "echo hi", "dangerouslyDisableSandbox": True})
        )
        daemon.send(tool_use("read-tail", {"file_path": "lines.txt", "offset": -2}, name="Read"))
        daemon.send(tool_use("read-bad", {"file_path": 7, "pages": "1"}, name="Read"))
        grep = {"pattern": "needle", "path": "code.py", "output_mode": "content", "-n": False}
        daemon.send(tool_use("grep-context", {**grep, "context": 1}, name="Grep"))
        daemon.send(tool_use("write-missing", {"file_path": "new.txt"}, name="Write"))
        daemon.send(
            tool_use(
                "edit-type", {"file_path": "x", "old_string": 1, "new_string": "y"}, name="Edit"
            )
        )
        daemon.send(tool_use("glob-null", {"pattern": "*", "path": None}, name="Glob"))

        sandbox = daemon.result("bash-sandbox")
        assert not sandbox.is_error and sandbox.content == "hi"
        tail = daemon.result("read-tail")
        assert tail.content == "     9\tline 9\n    10\tline 10"
        bad = daemon.result("read-bad")
        assert bad.content == (
            f"{HEAD}Read failed due to the following issues:\n"
            "An unexpected parameter `pages` was provided\n"
            f"The parameter `file_path` type is expected as `string` but provided as `number`{TAIL}"
        )
        assert daemon.result("grep-context").content == "b\nneedle\nc"
        assert daemon.result("write-missing").content == (
            f"{HEAD}Write failed due to the following issue:\n"
            f"The required parameter `content` is missing{TAIL}"
        )
        assert daemon.result("edit-type").content == (
            f"{HEAD}Edit failed due to the following issue:\n"
            "The parameter `old_string` type is expected as `string` but provided as `number`"
            f"{TAIL}"
        )
        assert daemon.result("glob-null").meta.status == "invalid_input"
        # Last: a Bash failure, invalid input included, cancels its siblings.
        daemon.send(tool_use("bash-extra", {"command": "echo hi", "sudo": True}))
        extra = daemon.result("bash-extra")
        assert extra.is_error and extra.meta.status == "invalid_input"
        assert extra.content == (
            f"{HEAD}Bash failed due to the following issue:\n"
            f"An unexpected parameter `sudo` was provided{TAIL}"
        )
        drain(daemon, "d1")


def test_a_command_longer_than_one_kernel_argument_is_refused_and_the_longest_runs(
    tmp_path: Path,
) -> None:
    # `bash -c COMMAND`: the kernel refuses one argument over 32 pages (E2BIG). The longest
    # that fits runs (multi-byte characters counted as bytes); one byte more is refused when
    # validated, and the daemon (and its spawner) serve the next call as before.
    longest = "echo " + "é" * ((131071 - 5) // 2)
    assert len(longest.encode()) == 131071
    with run_daemon(tmp_path) as daemon:
        daemon.send(tool_use("fits", {"command": longest}))
        fits = daemon.result("fits")
        assert fits.meta.status == "success" and fits.meta.output_bytes == 131067
        drain(daemon, "d1")
        daemon.send(tool_use("over", {"command": longest + "x"}))
        over = daemon.result("over")
        assert over.meta.status == "invalid_input"
        assert "is 131072 bytes; Linux passes at most 131071 bytes" in str(over.content)
        drain(daemon, "d2")
        daemon.send(tool_use("after", {"command": "echo still here"}))
        assert daemon.result("after").content == "still here"
