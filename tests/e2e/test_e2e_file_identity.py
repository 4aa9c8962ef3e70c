"""File deny rules hold on the file's identity, and searches never show denied files
(issue 11, class 4): hard links, symlinks and directory searches, through the real daemon."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from daemon_harness import run_daemon, tool_use

SECRET = "TOKEN=hunter2-very-secret"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "secrets").mkdir()
    (ws / ".env").write_text(SECRET + "\n")
    (ws / "secrets" / "key.pem").write_text(SECRET + " pem\n")
    (ws / "docs" / "guide.md").write_text("TOKEN is documented here\n")
    os.link(ws / ".env", ws / "docs" / "notes.txt")  # a hard link under an allowed name
    os.link(ws / "secrets" / "key.pem", ws / "docs" / "key-copy.txt")
    (ws / "docs" / "alias.txt").symlink_to(ws / ".env")
    settings = {
        "permissions": {
            "deny": ["Read(./.env)", "Read(secrets/**)", "Edit(./.env)", "Edit(secrets/**)"],
            "allow": ["Read(docs/**)", "Edit(docs/**)"],
        }
    }
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    return ws


ARGS = ("--permission-mode", "bypassPermissions", "--no-prompt")


def _settings(tmp_path: Path) -> tuple[str, ...]:
    return (*ARGS, "--settings", str(tmp_path / "settings.json"))


@pytest.mark.parametrize("name", ["docs/notes.txt", "docs/key-copy.txt", "docs/alias.txt"])
def test_read_and_edit_of_another_name_are_denied(tmp_path: Path, name: str) -> None:
    ws = _workspace(tmp_path)
    with run_daemon(ws, *_settings(tmp_path)) as d:
        d.send(tool_use("r", {"file_path": name}, name="Read"))
        d.send(
            tool_use(
                "e",
                {"file_path": name, "old_string": "TOKEN", "new_string": "X"},
                name="Edit",
            )
        )
        d.send(tool_use("g", {"pattern": "TOKEN", "path": name}, name="Grep"))
        d.send({"type": "drain"})
        for tool_use_id in ("r", "e", "g"):
            result = d.result(tool_use_id)
            assert result.is_error and result.meta.status == "denied", result
            assert "hunter2" not in str(result.content)
    assert SECRET in (ws / ".env").read_text()


def test_grep_over_a_directory_returns_no_denied_content(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with run_daemon(ws, *_settings(tmp_path)) as d:
        for i, mode in enumerate(("content", "files_with_matches", "count")):
            d.send(tool_use(f"g{i}", {"pattern": "TOKEN", "output_mode": mode}, name="Grep"))
        d.send(tool_use("gd", {"pattern": "TOKEN", "path": "docs", "-n": True}, name="Grep"))
        d.send({"type": "drain"})
        outputs = [str(d.result(i).content) for i in ("g0", "g1", "g2", "gd")]
    for text in outputs:
        assert "hunter2" not in text
        assert "notes.txt" not in text and "key-copy" not in text and "alias.txt" not in text
        assert ".env" not in text and "key.pem" not in text
        assert "guide.md" in text  # the search itself still works


def test_glob_and_ls_never_list_denied_files(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with run_daemon(ws, *_settings(tmp_path)) as d:
        d.send(tool_use("a", {"pattern": "**/*"}, name="Glob"))
        d.send(tool_use("b", {"pattern": "*", "path": "docs"}, name="Glob"))
        d.send(tool_use("c", {"pattern": ".env"}, name="Glob"))
        d.send(tool_use("ls", {"path": str(ws)}, name="LS"))
        d.send({"type": "drain"})
        outputs = [str(d.result(i).content) for i in ("a", "b", "c", "ls")]
    for text in outputs:
        for hidden in (".env", "key.pem", "notes.txt", "key-copy.txt", "alias.txt"):
            assert hidden not in text, (hidden, text)
    assert "guide.md" in outputs[0] and "guide.md" in outputs[1] and "guide.md" in outputs[3]


def test_without_deny_rules_search_results_are_unchanged(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with run_daemon(ws, *ARGS) as d:
        d.send(tool_use("g", {"pattern": "hunter2", "output_mode": "content"}, name="Grep"))
        d.send({"type": "drain"})
        text = str(d.result("g").content)
    assert "notes.txt:1:TOKEN=hunter2" in text  # the ordinary format, path:line:text
