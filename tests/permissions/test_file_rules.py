"""File tools under rules, modes and workspace confinement, as a table.

The workspace is real: files, a directory next to it, symlinks in it that point out,
``additionalDirectories``, the spill directory. Paths in the table use ``{ws}``, ``{out}``,
``{extra}``, ``{spill}``; every escape (``..``, absolute paths, symlinks to files and to
directories, a dangling symlink a Write would create through, ``~``, case) has a row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from permission_harness import Workspace, workspace


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    yield from workspace(tmp_path)


@dataclass(frozen=True)
class Case:
    tool: str
    input: dict[str, Any]
    expect: str
    permissions: dict[str, Any] = field(default_factory=dict)
    mode: str = "default"
    cwd: str = "{ws}"


def layout(space: Workspace) -> dict[str, str]:
    ws, out = space.ws, space.outside
    (ws / "a.txt").write_text("a\n")
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x = 1\n")
    (ws / ".env").write_text("TOKEN=1\n")
    (ws / "sub").mkdir()
    (ws / "sub" / ".env").write_text("TOKEN=2\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("k\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("g\n")
    (out / "secret.txt").write_text("s\n")
    (ws / "link_out").symlink_to(out)
    (ws / "link_in").symlink_to(ws / "src")
    (ws / "link_env").symlink_to(ws / ".env")
    (ws / "docs" / "evil").symlink_to(out / "secret.txt")
    (ws / "dangling").symlink_to(out / "new.txt")
    extra = space.root / "extra"
    extra.mkdir()
    (extra / "f.txt").write_text("f\n")
    space.spill.mkdir()
    (space.spill / "000001-toolu.txt").write_text("spilled\n")
    return {"ws": str(ws), "out": str(out), "extra": str(extra), "spill": str(space.spill)}


def read(path: str, expect: str, **kw: Any) -> Case:
    return Case("Read", {"file_path": path}, expect, **kw)


def write(path: str, expect: str, **kw: Any) -> Case:
    return Case("Write", {"file_path": path, "content": "x"}, expect, **kw)


def edit(path: str, expect: str, **kw: Any) -> Case:
    return Case("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, expect, **kw)


DENY_SECRETS = {"deny": ["Read(.env)", "Read(secrets/**)", "Edit(/src/**)"]}

CASES: dict[str, Case] = {
    # --- confinement in the default mode ------------------------------------------------
    "relative read inside": read("a.txt", "allow"),
    "absolute read inside": read("{ws}/a.txt", "allow"),
    "read through a symlink that stays inside": read("link_in/m.py", "allow"),
    "read inside additionalDirectories": read(
        "{extra}/f.txt", "allow", permissions={"additionalDirectories": ["../extra"]}
    ),
    "read of a spilled result": read("{spill}/000001-toolu.txt", "allow"),
    "dot-dot out": read("../outside/secret.txt", "ask"),
    "dot-dot through a subdirectory": read("src/../../outside/secret.txt", "ask"),
    "dot-dot hidden in an absolute path": read("{ws}/src/../../outside/secret.txt", "ask"),
    "absolute path outside": read("{out}/secret.txt", "ask"),
    "/etc/passwd": read("/etc/passwd", "ask"),
    "home directory": read("~/.bashrc", "ask"),
    "symlinked directory pointing out": read("link_out/secret.txt", "ask"),
    "symlinked file pointing out": read("docs/evil", "ask"),
    "case-changed workspace path (case-sensitive fs)": read("{WS}/a.txt", "ask"),
    "trailing slash inside": read("src/", "allow"),
    "trailing slash outside": read("../outside/", "ask"),
    "cwd moved outside by cd": read("secret.txt", "ask", cwd="{out}"),
    "glob inside": Case("Glob", {"pattern": "**/*.py"}, "allow"),
    "glob with an absolute pattern": Case("Glob", {"pattern": "/etc/*"}, "ask"),
    "glob with a dot-dot pattern": Case("Glob", {"pattern": "../outside/*"}, "ask"),
    "glob with a path outside": Case("Glob", {"pattern": "*", "path": "{out}"}, "ask"),
    "glob through a symlinked path": Case("Glob", {"pattern": "*", "path": "link_out"}, "ask"),
    "grep inside": Case("Grep", {"pattern": "x"}, "allow"),
    "grep with a path outside": Case("Grep", {"pattern": "x", "path": ".."}, "ask"),
    "grep from a cwd outside": Case("Grep", {"pattern": "x"}, "ask", cwd="{out}"),
    # --- writes -------------------------------------------------------------------------
    "default: a write asks": write("a.txt", "ask"),
    "acceptEdits: a write inside runs": write("src/new.py", "allow", mode="acceptEdits"),
    "acceptEdits: an edit inside runs": edit("a.txt", "allow", mode="acceptEdits"),
    "acceptEdits: a write outside asks": write("../outside/x", "ask", mode="acceptEdits"),
    "acceptEdits: a write through a dangling symlink": write("dangling", "ask", mode="acceptEdits"),
    "acceptEdits: no writes into the spill dir": write("{spill}/x", "ask", mode="acceptEdits"),
    "bypass: a write outside is denied": write("{out}/x", "deny", mode="bypassPermissions"),
    "bypass: a read outside is denied": read("{out}/secret.txt", "deny", mode="bypassPermissions"),
    "bypass: a write inside runs": write("a.txt", "allow", mode="bypassPermissions"),
    "dontAsk: a read outside is denied": read("{out}/secret.txt", "deny", mode="dontAsk"),
    "dontAsk: a write is denied": write("a.txt", "deny", mode="dontAsk"),
    "plan: a read runs": read("a.txt", "allow", mode="plan"),
    "plan: an edit is denied": edit("a.txt", "deny", mode="plan"),
    # --- deny rules: gitignore patterns with Claude Code's anchoring ---------------------
    "deny .env": read(".env", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"),
    "deny .env in a subdirectory": read(
        "sub/.env", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny .env by absolute path": read(
        "{ws}/.env", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny .env through ./": read(
        "./.env", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny .env through dot-dot": read(
        "src/../.env", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny .env through a symlink": read(
        "link_env", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny .env to grep": Case(
        "Grep", {"pattern": "T", "path": ".env"}, "deny", DENY_SECRETS, "bypassPermissions"
    ),
    "deny a directory's contents": read(
        "secrets/key", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny .ENV is another file here": read(
        ".ENV", "allow", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "Edit rule covers Write": write(
        "src/m.py", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "Edit rule covers Edit": edit(
        "src/m.py", "deny", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "/ is the settings file's project": write(
        "sub/src/m.py", "allow", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "Read rule does not cover Edit": edit(
        ".env", "allow", permissions=DENY_SECRETS, mode="bypassPermissions"
    ),
    "deny beats allow": read(
        ".env", "deny", permissions={"allow": ["Read"], "deny": ["Read(.env)"]}
    ),
    "ask rule on a path": read("docs/guide.md", "ask", permissions={"ask": ["Read(docs/**)"]}),
    # --- allow rules ------------------------------------------------------------------
    "allow rule lets edits run": edit("src/m.py", "allow", permissions={"allow": ["Edit(src/**)"]}),
    "allow rule elsewhere still asks": edit(
        "a.txt", "ask", permissions={"allow": ["Edit(src/**)"]}
    ),
    "Edit allow covers Write": write("src/n.py", "allow", permissions={"allow": ["Edit(src/**)"]}),
    "allow rule naming an outside path": read(
        "{out}/secret.txt", "allow", permissions={"allow": ["Read(/{out}/**)"]}
    ),
    "allow rule naming the symlink's target": read(
        "link_out/secret.txt", "allow", permissions={"allow": ["Read(/{out}/**)"]}
    ),
    "allow rule inside does not follow a symlink out": read(
        "docs/evil", "ask", permissions={"allow": ["Read(docs/**)"]}
    ),
    "bare allow rule does not lift confinement": read(
        "{out}/secret.txt", "ask", permissions={"allow": ["Read"]}
    ),
    "allow rule with ~": read(
        "{home}/notes/n.txt", "allow", permissions={"allow": ["Read(~/notes/**)"]}
    ),
}


def fill(value: Any, paths: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**paths)
    if isinstance(value, list):
        return [fill(v, paths) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, paths) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_file_rule_table(space: Workspace, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = layout(space)
    home = space.root / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "n.txt").write_text("n\n")
    monkeypatch.setenv("HOME", str(home))
    paths.update(home=str(home), WS=paths["ws"].upper())
    # `Read(/{out}/**)` becomes `Read(//tmp/.../outside/**)`: Claude Code's absolute form.
    permissions = fill(case.permissions, paths)
    gate = space.gate({"permissions": permissions}, mode=case.mode)
    decision = space.decide(gate, case.tool, fill(case.input, paths), cwd=fill(case.cwd, paths))
    assert decision.kind == case.expect, decision.reason


def test_case_tricks_on_a_case_insensitive_file_system(space: Workspace) -> None:
    # Linux is case-sensitive; on macOS the same checks run with ignore_case. Forcing the
    # flag exercises that path here: .ENV is then the denied .env, and the upper-cased
    # workspace is the workspace.
    paths = layout(space)
    gate = space.gate({"permissions": DENY_SECRETS}, mode="bypassPermissions", ignore_case=True)
    assert space.decide(gate, "Read", {"file_path": ".ENV"}).kind == "deny"
    assert space.decide(gate, "Read", {"file_path": "SECRETS/KEY"}).kind == "deny"
    upper = paths["ws"].upper() + "/a.txt"
    assert space.decide(gate, "Read", {"file_path": upper}).kind == "allow"


def test_an_outside_path_ask_names_the_path_and_its_target(space: Workspace) -> None:
    paths = layout(space)
    gate = space.gate()
    decision = space.decide(gate, "Read", {"file_path": "link_out/secret.txt"})
    target = f"{paths['out']}/secret.txt"
    assert decision.reason == (
        f"link_out/secret.txt (= {target}) is outside the workspace and additionalDirectories"
    )
    assert decision.firm
