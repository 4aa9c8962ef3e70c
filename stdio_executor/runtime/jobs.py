"""Background jobs on the wire: ``job_started``, ``job_exited`` and ``list_jobs``/``jobs``.

Owns: turning a ``background.Job`` into the ``JobInfo`` a host sees, and the events that
announce jobs (hosts learn of a job's end without polling; Claude Code tells its model the
same way).
Must not: start, read or stop jobs (``tools/background.py`` does), or write to the wire
itself: events go through the daemon's inbox, so they keep the order of everything else.
"""

from __future__ import annotations

from ..protocol import JobExited, JobInfo, Jobs, JobStarted, ListJobs
from ..tools.background import Job, JobRegistry

__all__ = ["job_exited", "job_info", "job_started", "list_jobs"]


def job_info(job: Job) -> JobInfo:
    return JobInfo(
        job_id=job.job_id,
        tool_use_id=job.tool_use_id,
        command=job.command,
        description=job.description,
        status=job.status,
        exit_code=job.exit_code,
        pid=job.pid,
        output_path=job.log_path,
        output_bytes=job.output_bytes,
        unread_bytes=job.unread_bytes,
        started_at=round(job.started_wall, 3),
    )


def job_started(job: Job) -> JobStarted:
    return JobStarted(job=job_info(job))


def job_exited(job: Job) -> JobExited:
    return JobExited(job=job_info(job))


def list_jobs(command: ListJobs, jobs: JobRegistry) -> Jobs:
    return Jobs(jobs=[job_info(job) for job in jobs.jobs], request_id=command.request_id)
