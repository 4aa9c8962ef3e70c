"""The tools that look after background shells: BashOutput, TaskOutput, KillShell, TaskStop.

Owns: their inputs (``inputs``), their result wording, which is Claude Code's so a model
reads them as it learned to (BashOutput's ``<status>``/``<exit_code>``/``<stdout>`` of
1.0.x-2.0.x, TaskOutput's ``<retrieval_status>`` block of 2.1.x, KillShell's and TaskStop's
JSON line), and their errors (an unknown id, a job that is not running, a bad filter).
Must not: hold jobs or processes: ``background.JobRegistry`` (``session.jobs``) does, and
killing goes through it, so every process a job started goes with it.

Differences from Claude Code, on purpose: stdout and stderr of a job share one stream (as a
foreground Bash call's do), so it is all under ``<stdout>``; no ``<timestamp>`` is added
(it would make every replay differ); TaskOutput returns the output produced since the
last read, as BashOutput does, rather than all of it again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from .background import Job, NewOutput
from .base import InputError, Tool, ToolContext, ToolOutcome
from .files.results import input_error, tool_error
from .inputs import BashOutputInput, KillShellInput, TaskOutputInput, TaskStopInput, parse
from .validation import Problems

__all__ = ["BashOutputTool", "KillShellTool", "TaskOutputTool", "TaskStopTool"]

# The shell jobs' output is held to Bash's own limit (catalog: Bash's max_result_bytes).
_TASK_TYPE = "local_bash"


class _Read(msgspec.Struct, frozen=True):
    job_id: str
    pattern: re.Pattern[str] | None


class _Wait(msgspec.Struct, frozen=True):
    job_id: str
    block: bool
    timeout_s: float


def _outcome(text: str, new: NewOutput, job: Job) -> ToolOutcome:
    return ToolOutcome(
        text,
        exit_code=job.exit_code,
        truncated=new.truncated,
        output_path=job.log_path if new.truncated else None,
        output_bytes=new.total_bytes,
    )


class BashOutputTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> _Read:
        value = parse(self.spec.name, BashOutputInput, raw)
        pattern = None
        if isinstance(value.filter, str) and value.filter:
            try:
                pattern = re.compile(value.filter)
            except re.error as exc:
                raise input_error(
                    self.spec.name, "filter", f"is not a valid regular expression: {exc}"
                ) from None
        return _Read(value.bash_id, pattern)

    def describe(self, value: Any) -> str:
        call: _Read = value
        return call.job_id

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _Read = value
        job = ctx.session.jobs.get(call.job_id)
        if job is None:
            return tool_error(f"No shell found with ID: {call.job_id}")
        new = ctx.session.jobs.read_new(job, self.spec.max_result_bytes, call.pattern)
        parts = [f"<status>{job.status}</status>"]
        if job.exit_code is not None:
            parts.append(f"<exit_code>{job.exit_code}</exit_code>")
        if new.text:
            parts.append(f"<stdout>\n{new.text.rstrip(chr(10))}\n</stdout>")
        return _outcome("\n\n".join(parts), new, job)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        outcome = self.run_inline(value, ctx)
        assert outcome is not None
        return outcome


class TaskOutputTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> _Wait:
        value = parse(self.spec.name, TaskOutputInput, raw)
        return _Wait(value.task_id, value.block, value.timeout / 1000)

    def describe(self, value: Any) -> str:
        call: _Wait = value
        return call.job_id

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _Wait = value
        job = ctx.session.jobs.get(call.job_id)
        if job is None:
            return tool_error(f"No task found with ID: {call.job_id}")
        if job.status != "running":
            return self._report(job, ctx, "success")
        if call.block and call.timeout_s > 0:
            return None  # waits: a task of its own
        # block with a zero timeout waited its whole (empty) time; no block did not wait.
        return self._report(job, ctx, "timeout" if call.block else "not_ready")

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _Wait = value
        job = ctx.session.jobs.get(call.job_id)
        if job is None:
            return tool_error(f"No task found with ID: {call.job_id}")
        done = await ctx.session.jobs.wait(job, call.timeout_s)
        return self._report(job, ctx, "success" if done else "timeout")

    def _report(self, job: Job, ctx: ToolContext, retrieval: str) -> ToolOutcome:
        new = ctx.session.jobs.read_new(job, self.spec.max_result_bytes, None)
        parts = [
            f"<retrieval_status>{retrieval}</retrieval_status>",
            f"<task_id>{job.job_id}</task_id>",
            f"<task_type>{_TASK_TYPE}</task_type>",
            f"<status>{job.status}</status>",
        ]
        if job.exit_code is not None:
            parts.append(f"<exit_code>{job.exit_code}</exit_code>")
        if new.text.strip():
            parts.append(f"<output>\n{new.text.rstrip(chr(10))}\n</output>")
        return _outcome("\n\n".join(parts), new, job)


class KillShellTool(Tool):
    """KillShell, and KillBash (its name before Claude Code 1.0.8x) as an alias."""

    def validate(self, raw: Mapping[str, Any]) -> str:
        return parse(self.spec.name, KillShellInput, raw).shell_id

    def describe(self, value: Any) -> str:
        return str(value)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        job_id: str = value
        job = ctx.session.jobs.get(job_id)
        if job is None:
            return tool_error(f"No shell found with ID: {job_id}")
        if not await ctx.session.jobs.kill(job):
            return tool_error(
                f"Shell {job_id} is not running, so cannot be killed (status: {job.status})"
            )
        message = f"Successfully killed shell: {job_id} ({job.command})"
        return ToolOutcome(_json({"message": message, "shell_id": job_id}))


class TaskStopTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> str:
        value = parse(self.spec.name, TaskStopInput, raw)
        for given in (value.task_id, value.shell_id):
            if isinstance(given, str):
                return given
        raise InputError(Problems(missing=["task_id"]).message(self.spec.name))

    def describe(self, value: Any) -> str:
        return str(value)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        job_id: str = value
        job = ctx.session.jobs.get(job_id)
        if job is None:
            return tool_error(f"No task found with ID: {job_id}")
        if not await ctx.session.jobs.kill(job):
            return tool_error(f"Task {job_id} is not running (status: {job.status})")
        message = f"Successfully stopped task: {job_id} ({job.command})"
        return ToolOutcome(_json({"message": message, "task_id": job_id, "task_type": _TASK_TYPE}))


def _json(obj: dict[str, str]) -> str:
    return msgspec.json.encode(obj).decode()
