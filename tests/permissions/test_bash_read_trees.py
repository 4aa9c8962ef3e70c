"""Which directories a Bash line descends into, judged against Read deny rules without
running it (the daemon-level classes are in tests/e2e/test_e2e_bash_read_classes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stdio_executor.permissions.policy import Facts, Policy
from stdio_executor.permissions.settings import load_settings


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("a\n")
    (tmp_path / "docs" / ".env").write_text("secret\n")
    (tmp_path / "src" / ".cache").mkdir(parents=True)
    (tmp_path / "src" / ".cache" / "key.pem").write_text("secret\n")
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    rules = {"permissions": {"deny": ["Read(**/.env)", "Read(**/*.pem)"]}}
    settings = load_settings(str(tmp_path), [json.dumps(rules)])
    return Policy(
        settings, mode="bypassPermissions", workspace=str(tmp_path), spill_dir=str(tmp_path / "s")
    )


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("rg secret docs", "allow"),  # ripgrep skips hidden files: .env is never read
        ("rg secret src", "allow"),  # nor a hidden directory
        ("rg --hidden secret docs", "deny"),
        ("rg -uu secret docs", "deny"),
        ("rg -. secret src", "deny"),
        ("ag secret docs", "allow"),
        ("ag --hidden secret docs", "deny"),
        ("grep -r secret docs", "deny"),  # grep reads hidden files
        ("grep -r secret src", "deny"),
        ("grep secret docs/a.txt", "allow"),
        ("tar c src", "deny"),
        ("ruff check src", "ask"),  # not known either way: asks, naming the file
        ("ls -la docs", "allow"),
        ("find . -name '*.tmp' -exec rm {} +", "allow"),  # runs nothing that reads
        ("find docs -type f -exec ls -l {} \\;", "allow"),
        ("find docs -type f -exec head {} \\;", "deny"),
        ("find docs -exec rm {} + -exec cat {} +", "deny"),
    ],
)
def test_what_a_walk_reaches(policy: Policy, tmp_path: Path, command: str, kind: str) -> None:
    decision = policy.evaluate(Facts("Bash", {"command": command}, False, str(tmp_path)))
    assert decision.kind == kind, decision.reason
