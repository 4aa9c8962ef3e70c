"""Tools the host implements: the daemon schedules them, the host runs them (SPEC section 7).

Owns: reading and checking host tool definitions (``--tools FILE``, ``register_tool``);
``HostTool``, which validates input against the definition's JSON Schema and runs a call by
asking the host; ``DelegatedTool``, a Claude Code tool the host serves under the daemon's
own definition (WebSearch, Task, Agent, or a built-in the host takes over), validated like
a built-in; and ``HostBridge``, the daemon's table of calls waiting for the host
(tool_use_id -> an event and the answer), which writes ``tool_call`` / ``tool_cancel`` and
takes ``tool_progress`` / ``tool_output``.
Must not: decide when a call starts or whether it is cancelled (the core does), or import
``jsonschema`` before ``ready`` (see ``json_schema``).

A call is one round trip: the daemon writes ``tool_call`` when the scheduler starts the tool;
the host answers with any number of ``tool_progress`` and one ``tool_output``. A cancelled
call (interrupt, abort, sibling error, discard, shutdown) or one that outlives its timeout
gets ``tool_cancel`` and its result is written at once, without waiting for the host; an
answer that arrives later is dropped with a logged warning, because the host could not know
it was too late. Answers for ids that never waited, or were already answered, are host bugs
and get ``unknown_tool_use_id`` errors.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import msgspec

from ..protocol import ErrorEvent, ToolCall, ToolCancel, ToolOutput, ToolProgressCommand
from ..protocol.messages import Event, HostToolDefinition
from .base import Content, InputError, Tool, ToolContext, ToolOutcome, ToolSpec
from .inputs import parse
from .json_schema import SchemaInput
from .output import spill_text

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "MAX_RESULT_BYTES",
    "DefinitionError",
    "DelegatedTool",
    "HostBridge",
    "HostTool",
    "check_definition",
    "delegated_tool",
    "host_tool",
    "limit_content",
    "load_definitions",
    "names_only",
]

log = logging.getLogger("stdio_executor")

DEFAULT_TIMEOUT_MS = 600_000
# Host and MCP results over this many bytes of text are spilled to a file and previewed.
MAX_RESULT_BYTES = 100_000
# The Messages API's rule for tool names.
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
# How many finished call ids are remembered to tell a late answer from a wrong one.
_REMEMBERED = 4096

NO_HOST_MESSAGE = (
    "<tool_use_error>The host closed its input before answering this tool call, so it "
    "did not run.</tool_use_error>"
)


class DefinitionError(Exception):
    """A host tool definition (or the file holding them) cannot be used."""


def load_definitions(path: str) -> list[HostToolDefinition]:
    """The definitions in a ``--tools`` file: a JSON array of API tool definitions."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DefinitionError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return msgspec.json.decode(data, type=list[HostToolDefinition])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise DefinitionError(f"{path}: not a JSON array of tool definitions: {exc}") from None


def check_definition(
    definition: HostToolDefinition, owner_of: Callable[[str], str | None]
) -> str | None:
    """What is wrong with a definition, short of its JSON Schema (``schema_problem``).

    ``owner_of(name)`` describes the tool that already holds a name (``"the built-in tool
    Bash"``), or returns None when the name is free for this definition.
    """
    names = [definition.name, *definition.aliases]
    for name in names:
        if not _NAME.fullmatch(name):
            return f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'"
        if name.startswith("mcp__"):
            return f"tool name {name!r}: names starting with 'mcp__' belong to MCP servers"
        owner = owner_of(name)
        if owner is not None:
            return f"tool name {name!r} is already taken by {owner}"
    if len(set(names)) != len(names):
        return f"tool {definition.name!r} lists the same name twice among its name and aliases"
    if definition.input_schema.get("type") != "object":
        return f'tool {definition.name!r}: input_schema must have "type": "object"'
    if definition.timeout_ms is not None and definition.timeout_ms <= 0:
        return f"tool {definition.name!r}: timeout_ms must be positive"
    return None


def host_tool(definition: HostToolDefinition, bridge: HostBridge) -> HostTool:
    spec = ToolSpec(
        name=definition.name,
        description=definition.description,
        input_schema=definition.input_schema,
        read_only="always" if definition.read_only else "never",
        interrupt_behavior=definition.interrupt_behavior,
        max_result_bytes=MAX_RESULT_BYTES,
        aliases=tuple(definition.aliases),
        source="host",
    )
    return HostTool(spec, bridge, definition.timeout_ms or DEFAULT_TIMEOUT_MS)


class HostTool(Tool):
    def __init__(self, spec: ToolSpec, bridge: HostBridge, timeout_ms: int) -> None:
        super().__init__(spec)
        self.bridge = bridge
        self.timeout_ms = timeout_ms
        self._input = SchemaInput(spec.name, spec.input_schema)

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        return self._input.validate(raw)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        return await self.bridge.call(self, value, ctx)


class DelegatedTool(HostTool):
    """A Claude Code tool the host runs: the built-in's name, schema, description and
    scheduling facts (``catalog.delegable_spec``), its input checked by the built-in's
    Struct (Claude Code's policy and wording, ``inputs``), then handed to the host as a
    ``tool_call`` with the input normalised (``"true"`` arrives as ``true``)."""

    def __init__(
        self, spec: ToolSpec, bridge: HostBridge, timeout_ms: int, input_cls: type[Any] | None
    ) -> None:
        super().__init__(spec, bridge, timeout_ms)
        self.input_cls = input_cls

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        if self.input_cls is None:  # a built-in without a Struct: its published schema
            return super().validate(raw)
        value = parse(self.spec.name, self.input_cls, raw)
        normalised: dict[str, Any] = msgspec.to_builtins(value)
        return normalised

    def rule_content(self, value: Any) -> str | None:
        """What the built-in's rules match (``WebFetch(domain:HOST)``), so a domain rule
        means the same whoever serves the tool; the built-in works it out."""
        builtin = _builtin_tool(self.spec.name)
        if builtin is None:
            return None
        try:
            return builtin.rule_content(builtin.validate(value))
        except InputError:
            return None


@functools.cache
def _builtin_tool(name: str) -> Tool | None:
    from .catalog import ToolRegistry, builtin_specs

    return ToolRegistry(builtin_specs([name])).get(name)


def delegated_tool(
    name: str, bridge: HostBridge, timeout_ms: int | None = None
) -> DelegatedTool | None:
    """The host's version of the Claude Code tool ``name``; None if there is no such tool."""
    from .catalog import delegable_spec
    from .inputs import INPUTS

    spec = delegable_spec(name)
    if spec is None:
        return None
    return DelegatedTool(spec, bridge, timeout_ms or DEFAULT_TIMEOUT_MS, INPUTS.get(spec.name))


def names_only(definition: HostToolDefinition) -> bool:
    """Whether a definition gives nothing but a name (and perhaps a timeout): the host
    asks to serve the Claude Code tool of that name under the daemon's definition."""
    return (
        not definition.description
        and definition.input_schema == {"type": "object"}
        and not definition.aliases
    )


def limit_content(content: Content, limit: int, ctx: ToolContext) -> ToolOutcome:
    """A result from outside (host, MCP server) under the tool's size limit.

    Text over the limit is written to a spill file and replaced by a preview, as for the
    built-ins; images and other blocks are kept as they are.
    """
    if isinstance(content, str):
        if len(content) <= limit // 4 or len(content.encode("utf-8", "replace")) <= limit:
            return ToolOutcome(content, output_bytes=None)
        out = spill_text(content, limit, ctx.session.spill_path(ctx.tool_use_id))
        return ToolOutcome(
            out.text, truncated=True, output_path=out.path, output_bytes=out.total_bytes
        )
    texts = [b.get("text") for b in content if b.get("type") == "text"]
    size = sum(len(t.encode("utf-8", "replace")) for t in texts if isinstance(t, str))
    if size <= limit:
        return ToolOutcome(content)
    joined = "\n".join(t for t in texts if isinstance(t, str))
    out = spill_text(joined, limit, ctx.session.spill_path(ctx.tool_use_id))
    rest = [b for b in content if b.get("type") != "text"]
    return ToolOutcome(
        [{"type": "text", "text": out.text}, *rest],
        truncated=True,
        output_path=out.path,
        output_bytes=out.total_bytes,
    )


class _Pending(msgspec.Struct):
    done: anyio.Event
    progress: Callable[[dict[str, Any]], None]
    answer: ToolOutput | None = None


def _unattached(event: Event) -> None:  # pragma: no cover - the daemon attaches at once
    raise RuntimeError("HostBridge used before the daemon attached its writer")


class HostBridge:
    """Host tool calls in flight. Every method runs on the daemon's event loop."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}
        # Ids whose call ended: "cancelled" (a late answer is expected) or "answered".
        self._ended: OrderedDict[str, str] = OrderedDict()
        # Answers that came before their tool_call was written (a host replaying a recorded
        # session pipes them at once): kept until the call starts.
        self._early: OrderedDict[str, list[tuple[ToolOutput | ToolProgressCommand, int | None]]]
        self._early = OrderedDict()
        self._emit: Callable[[Event], None] = _unattached
        self._turn: Callable[[], int | None] = lambda: None
        self._expects: Callable[[str], bool] = lambda tool_use_id: False
        self._input_closed = False

    def attach(
        self,
        emit: Callable[[Event], None],
        turn: Callable[[], int | None],
        expects: Callable[[str], bool],
    ) -> None:
        """``emit`` writes an event now; ``turn`` is the open turn (a running tool's turn);
        ``expects(id)`` says whether a host tool call with that id is added but not yet
        asked of the host."""
        self._emit = emit
        self._turn = turn
        self._expects = expects

    async def call(self, tool: HostTool, value: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        # A call cancelled before its task first ran (discard in the same batch) must not
        # reach the host: nothing of a discarded turn is written.
        await anyio.lowlevel.checkpoint_if_cancelled()
        tool_use_id = ctx.tool_use_id
        early = self._early.pop(tool_use_id, [])
        if self._input_closed and not any(isinstance(cmd, ToolOutput) for cmd, _ in early):
            return ToolOutcome(NO_HOST_MESSAGE, is_error=True)
        pending = _Pending(anyio.Event(), ctx.progress)
        self._pending[tool_use_id] = pending
        self._ended.pop(tool_use_id, None)
        self._emit(
            ToolCall(tool_use_id=tool_use_id, name=tool.spec.name, input=value, turn=self._turn())
        )
        for cmd, line in early:
            if isinstance(cmd, ToolOutput):
                error = self.on_output(cmd, line)
            else:
                error = self.on_progress(cmd, line)
            if error is not None:
                self._emit(error)
        try:
            with anyio.fail_after(tool.timeout_ms / 1000):
                await pending.done.wait()
        except TimeoutError:
            self._abandon(tool_use_id, pending, "timeout")
            return ToolOutcome(
                f"<tool_use_error>{tool.spec.name} did not finish within "
                f"{tool.timeout_ms / 1000:g}s and was cancelled.</tool_use_error>",
                is_error=True,
                status="timed_out",
            )
        except anyio.get_cancelled_exc_class() as exc:
            if pending.answer is None:
                self._abandon(tool_use_id, pending, _cancel_reason(exc))
            raise
        answer = pending.answer
        assert answer is not None
        result = limit_content(answer.content, tool.spec.max_result_bytes, ctx)
        if answer.is_error:
            return ToolOutcome(
                result.content,
                is_error=True,
                truncated=result.truncated,
                output_path=result.output_path,
                output_bytes=result.output_bytes,
            )
        return result

    def _abandon(self, tool_use_id: str, pending: _Pending, reason: str) -> None:
        if self._pending.get(tool_use_id) is pending:
            del self._pending[tool_use_id]
        self._remember(tool_use_id, "cancelled")
        self._emit(ToolCancel(tool_use_id=tool_use_id, reason=reason))

    def _remember(self, tool_use_id: str, how: str) -> None:
        self._ended[tool_use_id] = how
        self._ended.move_to_end(tool_use_id)
        while len(self._ended) > _REMEMBERED:
            self._ended.popitem(last=False)

    # ------------------------------------------------------------------ host answers

    def on_progress(self, cmd: ToolProgressCommand, line: int | None) -> ErrorEvent | None:
        pending = self._pending.get(cmd.tool_use_id)
        if pending is not None:
            pending.progress(cmd.data)
            return None
        if self._ended.get(cmd.tool_use_id) == "cancelled":
            log.debug("progress for cancelled host tool call %s ignored", cmd.tool_use_id)
            return None
        if self._hold_early(cmd, line):
            return None
        return self._unknown(cmd.tool_use_id, "tool_progress", line)

    def on_output(self, cmd: ToolOutput, line: int | None) -> ErrorEvent | None:
        tool_use_id = cmd.tool_use_id
        pending = self._pending.get(tool_use_id)
        if pending is None:
            if self._ended.get(tool_use_id) == "cancelled":
                log.warning(
                    "tool_output for %s arrived after the call was cancelled; ignored",
                    tool_use_id,
                )
                return None
            if self._hold_early(cmd, line):
                return None
            return self._unknown(tool_use_id, "tool_output", line)
        if isinstance(cmd.content, list):
            bad = next(
                (i for i, b in enumerate(cmd.content) if not isinstance(b.get("type"), str)), None
            )
            if bad is not None:
                return ErrorEvent(
                    code="invalid_command",
                    message=(
                        f"tool_output for {tool_use_id!r}: content block {bad} has no string "
                        "`type`; the call is still waiting for a valid tool_output"
                    ),
                    line=line,
                    tool_use_id=tool_use_id,
                )
        del self._pending[tool_use_id]
        self._remember(tool_use_id, "answered")
        pending.answer = cmd
        pending.done.set()
        return None

    def _hold_early(self, cmd: ToolOutput | ToolProgressCommand, line: int | None) -> bool:
        if cmd.tool_use_id in self._ended or not self._expects(cmd.tool_use_id):
            return False
        self._early.setdefault(cmd.tool_use_id, []).append((cmd, line))
        while len(self._early) > _REMEMBERED:  # calls that were denied and never asked
            self._early.popitem(last=False)
        return True

    def on_input_closed(self) -> None:
        """stdin reached EOF: nobody can answer; waiting and later calls fail at once."""
        self._input_closed = True
        for tool_use_id, pending in list(self._pending.items()):
            del self._pending[tool_use_id]
            self._remember(tool_use_id, "answered")
            pending.answer = ToolOutput(
                tool_use_id=tool_use_id, content=NO_HOST_MESSAGE, is_error=True
            )
            pending.done.set()

    def _unknown(self, tool_use_id: str, kind: str, line: int | None) -> ErrorEvent:
        if self._ended.get(tool_use_id) == "answered":
            why = "was already answered"
        else:
            why = "is not a host tool call waiting for an answer"
        return ErrorEvent(
            code="unknown_tool_use_id",
            message=f"{kind} for {tool_use_id!r} ignored: that id {why}",
            line=line,
            tool_use_id=tool_use_id,
        )


def _cancel_reason(exc: BaseException) -> str:
    """The reason the runtime gave ``CancelScope.cancel`` (anyio puts it in the message)."""
    _, found, reason = str(exc).rpartition("; reason: ")
    if not found or not reason:
        return "cancelled"
    return "shutdown" if reason == "daemon exiting" else reason
