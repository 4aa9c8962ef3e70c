"""What follows a heredoc's delimiter on its line, and a backquote in its body, run: a
Bash deny rule must see them (tree-sitter hangs them inside the heredoc, or not at all)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stdio_executor.permissions.policy import Facts, Policy
from stdio_executor.permissions.settings import load_settings
from stdio_executor.permissions.shell import parse

SPELLINGS = [
    "cat <<EOF | touch M\nhi\nEOF",
    "cat <<EOF && touch M\nhi\nEOF",
    "cat <<EOF; touch M\nhi\nEOF",
    "cat > /dev/null <<EOF || touch M\nx\nEOF",
    "cat <<-EOF | sh\n\ttouch M\n\tEOF",
    "cat <<EOF\n`touch M`\nEOF",
    "cat <<EOF\n$(touch M)\nEOF",
    "cat <<EOF\nx ${y:-$(touch M)}\nEOF",
    "python3 - <<EOF\nimport os\nEOF\ntouch M",
]


@pytest.mark.parametrize("command", SPELLINGS)
def test_a_bash_deny_rule_sees_what_a_heredoc_line_runs(tmp_path: Path, command: str) -> None:
    settings = load_settings(
        str(tmp_path), [json.dumps({"permissions": {"deny": ["Bash(touch:*)"]}})]
    )
    policy = Policy(
        settings, mode="bypassPermissions", workspace=str(tmp_path), spill_dir=str(tmp_path / "s")
    )
    decision = policy.evaluate(Facts("Bash", {"command": command}, False, str(tmp_path)))
    assert decision.kind in ("deny", "ask"), decision.reason
    assert "touch" in decision.reason or "could not be checked" in decision.reason


def test_a_quoted_heredoc_body_is_text() -> None:
    parsed = parse("cat <<'EOF'\n`touch M` $(touch M)\nEOF")
    assert parsed.ok
    assert [[w.text for w in c.words] for c in parsed.commands] == [["cat"]]
