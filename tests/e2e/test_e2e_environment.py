"""What a command, a hook and an MCP server inherit of the daemon's environment: never the
model API's credentials; cloud credentials only unless --scrub-env or
CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1 says otherwise (stdio_executor/environment.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_harness import REPO_ROOT

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "CLAUDE_CODE_OAUTH_TOKEN": "oauth-secret",
    "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer otel-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "GITHUB_TOKEN": "gh-token",
    "PLAIN_SETTING": "plain",
}


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The output of one Bash call and of the hook that ran before it."""
    hook_out = tmp_path / "hook-env"
    settings = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": f"env > {hook_out}"}]}
            ]
        }
    }
    lines = [
        {
            "type": "add_tool",
            "tool_use": {
                "type": "tool_use",
                "id": "t1",
                "name": "Bash",
                "input": {"command": "env"},
            },
        },
        {"type": "drain"},
    ]
    full_env = {**os.environ, **SECRETS, **(env or {})}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stdio_executor",
            "--workspace",
            str(tmp_path),
            "--permission-mode",
            "bypassPermissions",
            "--settings",
            json.dumps(settings),
            *args,
        ],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO_ROOT,
        timeout=60,
    )
    results = [json.loads(x) for x in done.stdout.splitlines() if '"tool_result"' in x]
    assert len(results) == 1 and results[0]["meta"]["status"] == "success", done.stdout
    return str(results[0]["content"]) + "\n" + hook_out.read_text()


def test_the_model_apis_credentials_never_reach_a_command_or_a_hook(tmp_path: Path) -> None:
    seen = _run(tmp_path)
    for secret in ("sk-ant-secret", "oauth-secret", "otel-secret"):
        assert secret not in seen
    # What the user's commands may need stays, as in Claude Code by default.
    assert "AWS_SECRET_ACCESS_KEY=aws-secret" in seen
    assert "GITHUB_TOKEN=gh-token" in seen and "PLAIN_SETTING=plain" in seen


@pytest.mark.parametrize(
    ("args", "env"),
    [(("--scrub-env",), None), ((), {"CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1"})],
    ids=["flag", "claude-code-variable"],
)
def test_cloud_credentials_go_too_when_asked(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str] | None
) -> None:
    seen = _run(tmp_path, *args, env=env)
    assert "aws-secret" not in seen and "sk-ant-secret" not in seen
    assert "GITHUB_TOKEN=gh-token" in seen


def test_the_host_can_keep_a_credential_or_all_of_them(tmp_path: Path) -> None:
    kept = _run(tmp_path, "--keep-env", "ANTHROPIC_API_KEY")
    assert "ANTHROPIC_API_KEY=sk-ant-secret" in kept and "oauth-secret" not in kept
    everything = _run(tmp_path, env={"CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "0"})
    assert "ANTHROPIC_API_KEY=sk-ant-secret" in everything
