"""The gate built from Claude Code settings: hooks, rules, modes and the ask round-trip.

Owns: the order of a check, as Claude Code does it. PreToolUse hooks run first (a block or a
``deny`` ends it; an ``updatedInput`` replaces the input, which is validated again and then
judged); then the policy judges the (possibly rewritten) input: a deny rule always wins, even
over a hook's ``allow``; a hook's ``allow`` skips an ask that only the mode would make, never
an ask rule; a hook's ``ask`` asks even when a rule allows. An ask goes to the host
(``asker``); an input the host rewrites is validated again and deny rules still hold. After a
successful run, PostToolUse hooks may block (the result becomes an error with status
``denied`` and the reason) or add context. ``quick_verdict`` answers without waiting
whenever no hook matches and no ask is needed, so plain reads keep the runtime's fast path;
and when nothing can object to a tool's calls at all (no rule names the tool, no hook
matches it, the mode allows every call of it, no sandbox setting applies), it answers from a
per-tool cache without judging the input: confinement to the workspace, the one check left,
is then the tool's own, on the file it opened (``Allow.confine``), and only tools that make
that check (``Tool.confines``) get the cache.
Must not: parse rules or run processes itself (``rules``, ``policy``, ``hooks`` do).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..confine import Confinement
from ..hooks.config import Hooks
from ..processes import ProcessRegistry
from ..protocol import ErrorEvent, PermissionResponse
from ..protocol.messages import Event
from ..tools.base import InputError, Tool, ToolOutcome
from .asker import Asker, error_text
from .gate import Allow, CallInfo, Deny, Gate, Verdict
from .policy import (
    DONT_ASK_REASON,
    READ_ONLY_REASON,
    Decision,
    Facts,
    Policy,
    has_assignment_prefix,
)
from .rules import PATH_TOOLS
from .settings import HeldBack, Settings, case_insensitive

if TYPE_CHECKING:
    from ..sandbox.plan import Sandbox

__all__ = ["SettingsGate", "build_gate", "case_insensitive"]

log = logging.getLogger("stdio_executor")

_ALLOW = Allow()  # shared: a verdict is never mutated


def build_gate(
    settings: Settings,
    *,
    mode: str | None,
    no_prompt: bool,
    workspace: str,
    spill_dir: str,
    permission_timeout: float | None = None,
    session_id: str,
    processes: ProcessRegistry,
    ignore_case: bool = False,
    sandbox: Sandbox | None = None,
    workspace_trusted: bool = False,
) -> SettingsGate:
    """``mode`` (``--permission-mode``) overrides the settings' ``defaultMode``;
    ``workspace_trusted``: ``--trust-workspace``."""
    policy = Policy(
        settings,
        mode=mode or settings.default_mode or "default",
        workspace=workspace,
        spill_dir=spill_dir,
        ignore_case=ignore_case,
    )
    gate = SettingsGate(
        policy,
        settings.hooks,
        Asker(no_prompt=no_prompt, timeout=permission_timeout),
        workspace=workspace,
        session_id=session_id,
        processes=processes,
        sandbox=sandbox,
    )
    gate.mode_override = mode
    gate.workspace_trusted = workspace_trusted
    return gate


class SettingsGate(Gate):
    def __init__(
        self,
        policy: Policy,
        hooks: Hooks,
        asker: Asker,
        *,
        workspace: str,
        session_id: str,
        processes: ProcessRegistry,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.policy = policy
        self.sandbox = sandbox if sandbox is not None and sandbox.active else None
        self.hooks = hooks
        self.asker = asker
        self.workspace = workspace
        self.session_id = session_id
        self.processes = processes
        self._abort: Callable[[str | None], None] = lambda request_id: None
        self.mode_override: str | None = None  # --permission-mode, which wins over trust
        # Until the host trusts the workspace, its repository's git config is untrusted too.
        self.workspace_trusted = False
        self._env = {**os.environ, "CLAUDE_PROJECT_DIR": workspace}
        # Per tool name: (the tool, the verdict every call of it gets, or None: judge each
        # call). Emptied whenever rules, mode or hooks change (``trust``).
        self._unchecked: dict[str, tuple[Tool, Allow | None]] = {}

    def attach(self, emit: Callable[[Event], None], abort: Callable[[str | None], None]) -> None:
        self.asker.attach(emit, abort)
        self._abort = abort

    def trust(self) -> HeldBack | None:
        """The host trusts the workspace: the settings its files held back take effect for
        every later check (rules, mode, hooks). What was held back, or None."""
        self.workspace_trusted = True
        settings = self.policy.settings
        if settings.pending is None:
            return None
        full = settings.pending
        old = self.policy
        self.policy = Policy(
            full,
            mode=self.mode_override or full.default_mode or "default",
            workspace=self.workspace,
            spill_dir=old.spill_dir,
            ignore_case=old.ignore_case,
        )
        self.hooks = full.hooks
        self._unchecked.clear()
        self.warm()
        return settings.held_back

    def warm(self) -> None:
        """Load what the first check will need (run in a background thread at start-up)."""
        if self.policy.uses_shell_parser:
            from .shell import warm

            warm()
        if self.hooks.pre_tool_use or self.hooks.post_tool_use:
            from ..hooks import outcome, runner  # noqa: F401

    # ------------------------------------------------------------------------- checks

    def decide(self, call: CallInfo) -> Decision:
        """What rules and mode say about the call as it is, hooks aside."""
        decision = self.policy.evaluate(self._facts(call, call.raw_input, call.value))
        decision = self._sandboxed(call.name, call.raw_input, decision)
        return self._settle(decision, call.name)

    def quick_verdict(self, call: CallInfo) -> Verdict | None:
        tool = call.tool
        cached = self._unchecked.get(tool.spec.name)
        if cached is None or cached[0] is not tool:
            cached = (tool, self._unchecked_verdict(tool))
            self._unchecked[tool.spec.name] = cached
        if cached[1] is not None:
            return cached[1]
        if self.hooks.pre(call.name):
            return None
        try:
            decision = self.decide(call)
        except Exception:
            # A bug here must not cost the call its result: before_run runs inside the
            # tool's task, where an exception becomes an error result.
            log.exception("permission check of %s failed; retrying in the tool's task", call.name)
            return None
        if decision.kind == "allow":
            # The repository's config is looked at in the tool's task (it runs git).
            if self._repository_may_object(call.name, call.raw_input, decision):
                return None
            return Allow(confine=self._confine(call, decision))
        if decision.kind == "deny":
            return Deny(error_text(decision.reason))
        return None

    def _unchecked_verdict(self, tool: Tool) -> Allow | None:
        """The verdict for every call of ``tool`` when nothing could object to any of them,
        else None. Each condition below is one thing that can: a rule that names the tool
        (deny, ask, or an allow rule, which may grant a path outside the workspace), a
        PreToolUse or PostToolUse hook that matches it, a mode that asks or denies some call
        of it, the sandbox's say on Bash; for a file tool, confinement, which only a tool
        that checks the file it opened can take over."""
        spec = tool.spec
        name = spec.name
        if self.hooks.pre(name) or self.hooks.post(name):
            return None
        if any(self.policy.rules_for(name, spec.aliases, spec.file_access)):
            return None
        if name == "Bash" and (
            self.sandbox is not None or self.policy.read_deny or self.policy.edit_deny
        ):
            return None  # the sandbox's say; Read deny rules hold for Bash's readers
        mode = self.policy.mode
        if mode != "bypassPermissions":
            # Read-only in every mode (``_facts``), whatever the input: the mode allows it.
            if spec.permission_read_only is None:
                always = (
                    spec.source != "mcp"
                    and spec.read_only == "always"
                    and type(tool).is_concurrency_safe is Tool.is_concurrency_safe
                )
            else:
                always = spec.permission_read_only
            if not always:
                return None
        if spec.file_access is None and name not in PATH_TOOLS:
            return _ALLOW
        if not tool.confines:
            return None
        return Allow(confine=self.policy.confinement(spec.file_access))

    def _confine(
        self, call: CallInfo, decision: Decision, *, answered: bool = False
    ) -> Confinement | None:
        """What the tool must check the opened file against, when the decision held only
        because the call's path lay inside the roots."""
        if not decision.confined:
            return None
        return self.policy.confinement(call.tool.spec.file_access, answered=answered)

    def needs_after_run(self, call: CallInfo) -> bool:
        return bool(self.hooks.post(call.name))

    async def before_run(self, call: CallInfo) -> Verdict:
        tool_input: Mapping[str, Any] = call.raw_input
        value = call.value
        updated: Mapping[str, Any] | None = None
        notes: tuple[str, ...] = ()
        hook_decision: str | None = None
        hook_reason = ""
        pre = self.hooks.pre(call.name)
        if pre:
            from ..hooks.outcome import pre_outcome
            from ..hooks.runner import run_hooks

            runs = await run_hooks(
                pre,
                self._payload(call, "PreToolUse", tool_input),
                cwd=call.cwd,
                env=self._env,
                processes=self.processes,
            )
            outcome = pre_outcome(runs)
            notes = outcome.context
            if outcome.stop is not None:
                self._abort(None)
                return Deny(error_text(f"A PreToolUse hook stopped the turn: {outcome.stop}"))
            if outcome.block is not None:
                return Deny(error_text(f"A PreToolUse hook blocked this call: {outcome.block}"))
            if outcome.updated_input is not None:
                updated = tool_input = outcome.updated_input
                try:
                    value = call.tool.validate(updated)
                except InputError:
                    # Never runs: the runtime validates it again and reports invalid_input.
                    return Allow(updated_input=updated)
            hook_decision, hook_reason = outcome.decision, outcome.reason
        decision = self.policy.evaluate(self._facts(call, tool_input, value))
        if self._repository_may_object(call.name, tool_input, decision):
            decision = await self._repository(call, decision)
        decision = self._sandboxed(call.name, tool_input, decision)
        if decision.kind == "deny":
            return Deny(error_text(decision.reason))
        confine = self._confine(call, decision)
        answered = self._confine(call, decision, answered=True)
        if hook_decision == "ask":
            decision = Decision("ask", f"PreToolUse hook: {hook_reason}", firm=True)
        elif decision.kind == "allow" or (hook_decision == "allow" and not decision.firm):
            return Allow(updated_input=updated, notes=notes, confine=confine)
        decision = self._settle(decision, call.name)
        if decision.kind == "deny":
            return Deny(error_text(decision.reason))
        verdict = await self.asker.ask(call, tool_input, decision.reason)
        if isinstance(verdict, Deny):
            return verdict
        if verdict.updated_input is None:
            # The host allowed the call as judged: a file inside the roots must still be
            # inside when the tool opens it (the host may have taken its time).
            return Allow(updated_input=updated, notes=notes, confine=answered)
        # The host rewrote the input: validated again, and deny rules still hold.
        try:
            value = call.tool.validate(verdict.updated_input)
        except InputError:
            return Allow(updated_input=verdict.updated_input)
        denied = self.policy.denied(self._facts(call, verdict.updated_input, value))
        if denied is not None:
            return Deny(error_text(denied.reason))
        return Allow(updated_input=verdict.updated_input, notes=notes)

    async def after_run(self, call: CallInfo, result: ToolOutcome) -> ToolOutcome:
        post = self.hooks.post(call.name)
        if not post or result.is_error:
            return result  # as in Claude Code, PostToolUse follows a successful call only
        from ..hooks.outcome import post_outcome
        from ..hooks.runner import run_hooks

        payload = self._payload(call, "PostToolUse", call.raw_input, _response(call, result))
        runs = await run_hooks(post, payload, cwd=call.cwd, env=self._env, processes=self.processes)
        outcome = post_outcome(runs)
        if outcome.stop is not None:
            self._abort(None)
        if outcome.block is not None:
            feedback = f"A PostToolUse hook reported a problem with this call: {outcome.block}"
            result = msgspec.structs.replace(
                result, content=_append(result.content, feedback), is_error=True, status="denied"
            )
        if outcome.context:
            result = msgspec.structs.replace(
                result, content=_append(result.content, "\n".join(outcome.context))
            )
        return result

    def on_response(self, response: PermissionResponse) -> ErrorEvent | None:
        return self.asker.on_response(response)

    def on_interrupt(self, reason: str) -> None:
        self.asker.on_interrupt(reason)

    def on_input_closed(self) -> None:
        self.asker.on_input_closed()

    # ------------------------------------------------------------------------ helpers

    def _repository_may_object(
        self, name: str, tool_input: Mapping[str, Any], decision: Decision
    ) -> bool:
        """A Bash call allowed only because it reads, that may run git, in a workspace the
        host has not trusted: its repository's own config may name programs git runs."""
        return (
            decision.kind == "allow"
            and decision.reason == READ_ONLY_REASON
            and name == "Bash"
            and not self.workspace_trusted
            and _runs_git(str(tool_input.get("command", "")))
        )

    async def _repository(self, call: CallInfo, decision: Decision) -> Decision:
        from .readonly import harden_git
        from .repo_config import untrusted_program_keys

        keys = await untrusted_program_keys(call.cwd, harden_git(self._env), self.processes)
        if not keys:
            return decision
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        return Decision(
            "ask",
            "the command only reads, but git would read this repository's own config, which "
            f"sets {shown}: settings that can run programs, and the workspace is not trusted",
        )

    def _sandboxed(self, name: str, tool_input: Mapping[str, Any], decision: Decision) -> Decision:
        """The sandbox's say (docs/sandbox.md): ``dangerouslyDisableSandbox`` asks (refused
        when ``allowUnsandboxedCommands`` is false); ``autoAllowBashIfSandboxed`` turns an
        ask that only the mode made into an allow for a call that runs sandboxed."""
        if self.sandbox is None or name != "Bash" or decision.kind == "deny":
            return decision
        command = str(tool_input.get("command", ""))
        # Read as the Bash tool reads it: "true" (Claude Code's semanticBoolean) disables the
        # sandbox too, so it must ask too.
        disable = _as_bool(tool_input.get("dangerouslyDisableSandbox"))
        if disable:
            if not self.sandbox.settings.allow_unsandboxed:
                return Decision(
                    "deny",
                    "Running outside the sandbox (dangerouslyDisableSandbox) is not allowed: "
                    "sandbox.allowUnsandboxedCommands is false. Run the command without it.",
                )
            if self.policy.mode == "bypassPermissions":
                return decision
            return Decision("ask", "the command asks to run outside the sandbox", firm=True)
        if (
            decision.kind == "ask"
            and not decision.firm
            and self.sandbox.auto_allows(command, False)
        ):
            return Decision("allow", "sandboxed (sandbox.autoAllowBashIfSandboxed)")
        return decision

    def _settle(self, decision: Decision, name: str) -> Decision:
        """dontAsk mode: what would be asked is denied."""
        if decision.kind == "ask" and self.policy.mode == "dontAsk":
            if decision.reason == DONT_ASK_REASON:
                return Decision(
                    "deny",
                    f"Permission to use {name} has been denied: no rule allows it, and "
                    "dontAsk mode denies whatever no rule allows.",
                )
            return Decision(
                "deny",
                f"Permission to use {name} has been denied: it needs approval "
                f"({decision.reason}), and dontAsk mode denies whatever no rule allows.",
            )
        return decision

    def _facts(self, call: CallInfo, tool_input: Mapping[str, Any], value: Any) -> Facts:
        tool = call.tool
        spec = tool.spec
        facts = (spec.file_access, spec.path_field, tool.rule_content(value))
        if self.policy.mode == "bypassPermissions":
            # Read-only or not changes nothing in this mode: skip the classification.
            return Facts(spec.name, tool_input, False, call.cwd, spec.aliases, *facts)
        if spec.permission_read_only is not None:
            read_only = spec.permission_read_only
        else:
            # MCP servers declare readOnlyHint themselves: a hint, not a permission.
            read_only = spec.source != "mcp" and tool.is_concurrency_safe(value)
        if read_only and spec.name == "Bash":
            read_only = not has_assignment_prefix(str(tool_input.get("command", "")))
        return Facts(spec.name, tool_input, read_only, call.cwd, spec.aliases, *facts)

    def _payload(
        self,
        call: CallInfo,
        event: str,
        tool_input: Mapping[str, Any],
        response: dict[str, Any] | None = None,
    ) -> bytes:
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "cwd": call.cwd,
            "permission_mode": self.policy.mode,
            "hook_event_name": event,
            "tool_name": call.name,
            "tool_input": dict(tool_input),
            "tool_use_id": call.tool_use_id,
        }
        if response is not None:
            data["tool_response"] = response
        data["turn"] = call.turn
        data["sibling_tool_use_ids"] = call.siblings()
        import json  # hooks only: not on the way to a session's first call

        return json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogateescape")


def _response(call: CallInfo, result: ToolOutcome) -> dict[str, Any]:
    """``tool_response`` for PostToolUse: the result, plus Claude Code's usual field names."""
    response: dict[str, Any] = {
        "content": result.content,
        "is_error": result.is_error,
        "status": result.final_status,
        "exit_code": result.exit_code,
        "truncated": result.truncated,
        "output_path": result.output_path,
    }
    if call.name == "Bash" and isinstance(result.content, str):
        response.update(stdout=result.content, stderr="", interrupted=False)
    file_path = call.raw_input.get("file_path")
    if isinstance(file_path, str):
        response["filePath"] = file_path
    return response


def _append(content: str | list[dict[str, Any]], text: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return f"{content}\n{text}" if content else text
    return [*content, {"type": "text", "text": text}]


def _runs_git(command: str) -> bool:
    """Whether a read-only command line runs git (none of the read-only programs runs
    another, so git is the program word of one of its simple commands)."""
    if "git" not in command:
        return False
    from .bash_syntax import split_simple_commands

    commands = split_simple_commands(command)
    return commands is None or any(words and words[0] == "git" for words in commands)


def _as_bool(value: Any) -> bool:
    """A boolean input as ``tools.inputs.parse`` converts it (``"true"`` is true)."""
    if value is None or isinstance(value, bool):
        return value is True
    try:
        return bool(msgspec.convert(value, bool, strict=False))
    except msgspec.ValidationError:
        return False  # not a boolean at all: the input is refused before it can run
