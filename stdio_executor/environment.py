"""The credentials the daemon's children do not inherit.

Owns: which environment variables are removed from the daemon's own environment at
start-up, before anything is started, so that no child (Bash commands and the spawner, hook
commands, MCP stdio servers, ripgrep) ever sees them.
Must not: touch any other variable, or run after a child has been started.

Why: the host that spawns the daemon usually calls the model API itself, so its
environment holds the API key; a Bash command runs with the daemon's environment, and a
model (or a prompt injected through a file it reads) can print `$ANTHROPIC_API_KEY` or
send it anywhere the network allows. The daemon calls no model API, so the agent's own
credentials are removed by default. Cloud credentials and CI tokens may be what the user's
commands need (`aws s3 ls`), so they are removed only on request, as Claude Code does
under ``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1``.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping

__all__ = ["AGENT_CREDENTIALS", "CLOUD_CREDENTIALS", "scrub"]

# The model API's credentials and the telemetry headers that carry bearer tokens.
AGENT_CREDENTIALS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_FOUNDRY_API_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
)
# Removed too under --scrub-env / CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1.
CLOUD_CREDENTIALS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_FEDERATED_TOKEN_FILE",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
)


def scrub(
    environ: MutableMapping[str, str], *, everything: bool = False, keep: Iterable[str] = ()
) -> list[str]:
    """Remove the credentials from ``environ``; the names removed, in order.

    ``everything`` (or ``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1`` in ``environ``) adds the
    cloud credentials; ``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=0`` removes nothing (the host
    said its children need them); ``keep`` names variables left alone."""
    switch = environ.get("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "").strip().lower()
    if switch in ("0", "false", "no", "off"):
        return []
    names: tuple[str, ...] = AGENT_CREDENTIALS
    if everything or switch in ("1", "true", "yes", "on"):
        names += CLOUD_CREDENTIALS
    kept = frozenset(keep)
    removed = [name for name in names if name in environ and name not in kept]
    for name in removed:
        del environ[name]
    return removed
