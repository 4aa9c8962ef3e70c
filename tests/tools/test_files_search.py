"""Behaviour of Glob and Grep on real directory trees (SPEC section 5).

Grep runs the real ripgrep binary from the ``ripgrep`` wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from files_harness import CALL_TIMEOUT, Harness

from stdio_executor.tools.base import InputError
from stdio_executor.tools.files.globbing import MAX_RESULTS, glob_regex

pytestmark = pytest.mark.anyio

SECOND = 1_000_000_000


def make(root: Path, files: dict[str, str], *, age: list[str] | None = None) -> None:
    """Create files; with ``age``, the first name listed is the newest, a second apart."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    base = 1_700_000_000 * SECOND
    for i, name in enumerate(age or []):
        stamp = base - i * SECOND
        os.utime(root / name, ns=(stamp, stamp))


# -------------------------------------------------------------------- the glob language


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*.py", ["a.py", ".hidden.py"], ["d/a.py", "a.pyc", "a.py/x"]),
        ("**/*.py", ["a.py", "d/a.py", "d/e/f/a.py"], ["a.pyc", "d/a.txt"]),
        ("src/**/test_*.py", ["src/test_a.py", "src/x/y/test_b.py"], ["test_a.py", "src/a.py"]),
        ("src/**", ["src/a", "src/b/c"], ["srcs/a", "a/src/b"]),
        ("*.{ts,tsx}", ["a.ts", "b.tsx"], ["c.js", "a.t"]),
        ("{src,lib}/**/*.{c,h}", ["src/a.c", "lib/x/b.h"], ["bin/a.c", "src/a.o"]),
        ("?.txt", ["a.txt"], ["ab.txt", "/.txt"]),
        ("[ab]*.md", ["a.md", "bx.md"], ["c.md"]),
        ("[!ab]*.md", ["c.md"], ["a.md", "b.md"]),
        ("a+b(1).txt", ["a+b(1).txt"], ["aab1.txt"]),
        ("{a,b", ["{a,b"], ["a"]),
    ],
)
def test_glob_patterns_match_paths_like_a_shell(
    pattern: str, matches: list[str], misses: list[str]
) -> None:
    regex = glob_regex(pattern)
    for path in matches:
        assert regex.fullmatch(path), (pattern, path)
    for path in misses:
        assert not regex.fullmatch(path), (pattern, path)


# ------------------------------------------------------------------------------- Glob


async def test_glob_lists_matches_newest_first_as_absolute_paths(harness: Harness) -> None:
    ws = harness.workspace
    make(ws, {"old.py": "", "mid/m.py": "", "new/deep/n.py": "", "x.txt": ""})
    make(ws, {}, age=["new/deep/n.py", "old.py", "mid/m.py", "x.txt"])
    text = await harness.ok("Glob", {"pattern": "**/*.py"})
    assert text == "\n".join([f"{ws}/new/deep/n.py", f"{ws}/old.py", f"{ws}/mid/m.py"])


async def test_glob_without_a_double_star_stays_at_its_depth(harness: Harness) -> None:
    make(harness.workspace, {"a.py": "", "sub/b.py": ""})
    assert await harness.ok("Glob", {"pattern": "*.py"}) == f"{harness.workspace}/a.py"
    assert await harness.ok("Glob", {"pattern": "*/*.py"}) == f"{harness.workspace}/sub/b.py"


async def test_glob_skips_git_directories_but_not_other_hidden_files(harness: Harness) -> None:
    ws = harness.workspace
    make(ws, {".git/config": "", ".git/hooks/x": "", ".env": "", ".github/ci.yml": ""})
    text = await harness.ok("Glob", {"pattern": "**/*"})
    assert sorted(text.split("\n")) == [f"{ws}/.env", f"{ws}/.github/ci.yml"]


async def test_glob_searches_under_the_given_path(harness: Harness) -> None:
    ws = harness.workspace
    make(ws, {"a/x.md": "", "b/y.md": ""})
    assert await harness.ok("Glob", {"pattern": "*.md", "path": "a"}) == f"{ws}/a/x.md"
    absolute = await harness.ok("Glob", {"pattern": "*.md", "path": str(ws / "b")})
    assert absolute == f"{ws}/b/y.md"


async def test_glob_accepts_an_absolute_pattern(harness: Harness) -> None:
    ws = harness.workspace
    make(ws, {"a/x.md": "", "b/y.md": ""})
    assert await harness.ok("Glob", {"pattern": f"{ws}/*/y.md"}) == f"{ws}/b/y.md"


async def test_glob_of_a_plain_name_finds_that_file(harness: Harness) -> None:
    make(harness.workspace, {"docs/readme.md": ""})
    text = await harness.ok("Glob", {"pattern": "docs/readme.md"})
    assert text == f"{harness.workspace}/docs/readme.md"
    assert await harness.ok("Glob", {"pattern": "docs/other.md"}) == "No files found"


async def test_glob_with_no_match_says_no_files_found(harness: Harness) -> None:
    make(harness.workspace, {"a.txt": ""})
    outcome = await harness.call("Glob", {"pattern": "**/*.rs"})
    assert not outcome.is_error
    assert outcome.content == "No files found"


async def test_glob_caps_at_100_newest_and_says_how_many_matched(harness: Harness) -> None:
    names = [f"f{i:03d}.txt" for i in range(130)]
    make(harness.workspace, dict.fromkeys(names, ""), age=names)
    text = await harness.ok("Glob", {"pattern": "*.txt"})
    lines = text.split("\n")
    assert lines[:MAX_RESULTS] == [f"{harness.workspace}/{n}" for n in names[:MAX_RESULTS]]
    assert lines[MAX_RESULTS:] == [
        "(Results are truncated: the 100 newest of 130 matches. "
        "Use a more specific path or pattern.)"
    ]


async def test_glob_does_not_follow_symlinked_directories(harness: Harness) -> None:
    ws = harness.workspace
    make(ws, {"real/a.py": ""})
    os.symlink(ws, ws / "real" / "loop")
    os.symlink(ws / "real" / "a.py", ws / "link.py")
    text = await harness.ok("Glob", {"pattern": "**/*.py"})
    assert sorted(text.split("\n")) == [f"{ws}/link.py", f"{ws}/real/a.py"]


async def test_glob_path_must_be_a_directory(harness: Harness) -> None:
    make(harness.workspace, {"file.txt": ""})
    message = await harness.error("Glob", {"pattern": "*", "path": "file.txt"})
    assert message == (
        f"<tool_use_error>Path is not a directory: {harness.workspace}/file.txt</tool_use_error>"
    )
    message = await harness.error("Glob", {"pattern": "*", "path": "missing"})
    assert message == (
        f"<tool_use_error>Directory does not exist: {harness.workspace}/missing</tool_use_error>"
    )


async def test_glob_refuses_an_empty_pattern(harness: Harness) -> None:
    with pytest.raises(InputError, match="`pattern`"):
        harness.tool("Glob").validate({"pattern": " "})


# ------------------------------------------------------------------------------- Grep


@pytest.fixture
def tree(harness: Harness) -> Path:
    ws = harness.workspace
    make(
        ws,
        {
            "src/app.py": "import os\n\ndef main():\n    print('Hello')\n    return 0\n",
            "src/util.py": "def helper():\n    return 'hello world'\n",
            "docs/guide.md": "Say hello.\nThen HELLO again.\n",
            ".hidden/notes.txt": "hello from a hidden dir\n",
            ".git/HEAD": "hello from git\n",
        },
        age=["docs/guide.md", "src/util.py", ".hidden/notes.txt", "src/app.py"],
    )
    return ws


async def test_grep_lists_matching_files_newest_first_by_default(
    harness: Harness, tree: Path
) -> None:
    text = await harness.ok("Grep", {"pattern": "hello"})
    assert text == "\n".join(
        [
            "Found 3 files",
            f"{tree}/docs/guide.md",
            f"{tree}/src/util.py",
            f"{tree}/.hidden/notes.txt",
        ]
    )


async def test_grep_with_no_match_is_not_an_error(harness: Harness, tree: Path) -> None:
    for mode, expected in [
        ("files_with_matches", "No files found"),
        ("content", "No matches found"),
        ("count", "No matches found"),
    ]:
        outcome = await harness.call("Grep", {"pattern": "absent-xyz", "output_mode": mode})
        assert (outcome.is_error, outcome.content) == (False, expected), mode


async def test_grep_content_shows_line_numbers_by_default(harness: Harness, tree: Path) -> None:
    raw = {"pattern": "hello", "path": "src", "output_mode": "content"}
    assert await harness.ok("Grep", raw) == f"{tree}/src/util.py:2:    return 'hello world'"
    plain = await harness.ok("Grep", {**raw, "-n": False})
    assert plain == f"{tree}/src/util.py:    return 'hello world'"


async def test_grep_case_insensitive(harness: Harness, tree: Path) -> None:
    raw = {"pattern": "hello", "path": "docs/guide.md", "output_mode": "content", "-i": True}
    assert await harness.ok("Grep", raw) == "1:Say hello.\n2:Then HELLO again."


async def test_grep_context_lines(harness: Harness, tree: Path) -> None:
    raw = {"pattern": "print", "path": "src/app.py", "output_mode": "content"}
    assert await harness.ok("Grep", {**raw, "-B": 1}) == "3-def main():\n4:    print('Hello')"
    assert await harness.ok("Grep", {**raw, "-A": 1}) == "4:    print('Hello')\n5-    return 0"
    assert await harness.ok("Grep", {**raw, "-C": 2}) == (
        "2-\n3-def main():\n4:    print('Hello')\n5-    return 0"
    )
    # Claude Code's precedence: `context` over -C over -A/-B.
    assert await harness.ok("Grep", {**raw, "-C": 2, "-A": 0}) == (
        "2-\n3-def main():\n4:    print('Hello')\n5-    return 0"
    )
    assert await harness.ok("Grep", {**raw, "context": 1, "-C": 2}) == (
        "3-def main():\n4:    print('Hello')\n5-    return 0"
    )
    # Numbers as strings are accepted, as Claude Code's semanticNumber accepts them.
    assert await harness.ok("Grep", {**raw, "-B": "1"}) == "3-def main():\n4:    print('Hello')"


async def test_grep_filters_by_glob_and_type(harness: Harness, tree: Path) -> None:
    by_glob = await harness.ok("Grep", {"pattern": "(?i)hello", "glob": "*.md"})
    assert by_glob == f"Found 1 file\n{tree}/docs/guide.md"
    by_type = await harness.ok("Grep", {"pattern": "(?i)hello", "type": "py"})
    assert by_type == f"Found 2 files\n{tree}/src/util.py\n{tree}/src/app.py"
    several = await harness.ok("Grep", {"pattern": "(?i)hello", "glob": "*.md *.txt"})
    assert several == f"Found 2 files\n{tree}/docs/guide.md\n{tree}/.hidden/notes.txt"


async def test_grep_count_mode(harness: Harness, tree: Path) -> None:
    text = await harness.ok("Grep", {"pattern": "(?i)hello", "output_mode": "count"})
    assert text == "\n".join(
        [
            f"{tree}/.hidden/notes.txt:1",
            f"{tree}/docs/guide.md:2",
            f"{tree}/src/app.py:1",
            f"{tree}/src/util.py:1",
            "",
            "Found 5 matching lines across 4 files.",
        ]
    )


async def test_grep_multiline_matches_across_lines(harness: Harness, tree: Path) -> None:
    raw = {"pattern": r"main\(\):.*print", "path": "src", "output_mode": "content"}
    assert await harness.ok("Grep", raw) == "No matches found"
    text = await harness.ok("Grep", {**raw, "multiline": True})
    assert text == f"{tree}/src/app.py:3:def main():\n{tree}/src/app.py:4:    print('Hello')"


async def test_grep_head_limit_cuts_lines_and_entries(harness: Harness, tree: Path) -> None:
    big = tree / "big.txt"
    big.write_text("match\n" * 100_000)
    content = await harness.ok(
        "Grep", {"pattern": "match", "path": "big.txt", "output_mode": "content", "head_limit": 3}
    )
    assert content == "1:match\n2:match\n3:match\n\n(Showing the first 3 lines: head_limit=3.)"
    files = await harness.ok("Grep", {"pattern": "hello", "head_limit": 2})
    assert files == "\n".join(
        [
            "Found 3 files (showing 2, newest first: head_limit=2)",
            f"{tree}/docs/guide.md",
            f"{tree}/src/util.py",
        ]
    )
    count = await harness.ok(
        "Grep", {"pattern": "(?i)hello", "output_mode": "count", "head_limit": 1}
    )
    assert count.split("\n")[:2] == [
        f"{tree}/.hidden/notes.txt:1",
        "(showing 1 of 4 files: head_limit=1)",
    ]
    assert not harness.session.processes.live


async def test_grep_offset_skips_lines_and_entries_before_head_limit(
    harness: Harness, tree: Path
) -> None:
    (tree / "big.txt").write_text("".join(f"match {n}\n" for n in range(1, 11)))
    raw = {"pattern": "match", "path": "big.txt", "output_mode": "content", "-n": False}
    page = await harness.ok("Grep", {**raw, "offset": 2, "head_limit": 3})
    assert page == "match 3\nmatch 4\nmatch 5\n\n(Showing lines 3-5: head_limit=3, offset=2.)"
    rest = await harness.ok("Grep", {**raw, "offset": 8})
    assert rest == "match 9\nmatch 10\n\n(Showing lines 9-10: offset=8.)"
    past = await harness.ok("Grep", {**raw, "offset": 10})
    assert past == "No matches found after the first 10 lines."
    files = await harness.ok("Grep", {"pattern": "hello", "offset": 1, "head_limit": 1})
    assert files == "\n".join(
        ["Found 3 files (showing 1, newest first: head_limit=1, offset=1)", f"{tree}/src/util.py"]
    )
    count = await harness.ok("Grep", {"pattern": "(?i)hello", "output_mode": "count", "offset": 3})
    assert count.split("\n")[:2] == [f"{tree}/src/util.py:1", "(showing 1 of 4 files: offset=3)"]


async def test_grep_takes_a_pattern_that_starts_with_a_dash(harness: Harness, tree: Path) -> None:
    (tree / "flags.txt").write_text("use --force here\n")
    text = await harness.ok("Grep", {"pattern": "--force", "output_mode": "content"})
    assert text == f"{tree}/flags.txt:1:use --force here"


async def test_grep_strips_the_carriage_return_of_crlf_lines(harness: Harness) -> None:
    (harness.workspace / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    text = await harness.ok("Grep", {"pattern": "two", "output_mode": "content"})
    assert text == f"{harness.workspace}/dos.txt:2:two"


async def test_grep_cuts_very_long_lines(harness: Harness) -> None:
    (harness.workspace / "min.js").write_text("x" * 10_000 + "needle\n")
    text = await harness.ok("Grep", {"pattern": "needle", "output_mode": "content"})
    assert text.startswith(f"{harness.workspace}/min.js:1:[Omitted long")  # --max-columns 500
    assert "x" * 600 not in text


async def test_grep_content_over_the_limit_is_spilled(harness: Harness) -> None:
    (harness.workspace / "many.txt").write_text("".join(f"row {i}\n" for i in range(5000)))
    raw = {"pattern": "row", "path": "many.txt", "output_mode": "content"}
    full = await harness.ok("Grep", raw, tool=harness.tool("Grep", max_result_bytes=10**9))
    outcome = await harness.call("Grep", raw, tool=harness.tool("Grep", max_result_bytes=2_000))
    assert outcome.truncated
    assert outcome.output_path is not None
    assert await anyio.Path(outcome.output_path).read_text() == full + "\n"
    assert isinstance(outcome.content, str)
    assert outcome.content.startswith("1:row 0\n2:row 1\n")
    assert f"the full output is in {outcome.output_path}" in outcome.content


async def test_grep_with_a_bad_regex_is_an_error(harness: Harness, tree: Path) -> None:
    message = await harness.error("Grep", {"pattern": "(unclosed"})
    assert message.startswith("<tool_use_error>ripgrep failed: ")
    assert "unclosed group" in message


async def test_grep_of_a_missing_path_is_an_error(harness: Harness) -> None:
    message = await harness.error("Grep", {"pattern": "x", "path": "nowhere"})
    assert message == (
        f"<tool_use_error>Path does not exist: {harness.workspace}/nowhere</tool_use_error>"
    )


async def test_grep_refuses_negative_numbers(harness: Harness) -> None:
    with pytest.raises(InputError, match="`-A`"):
        harness.tool("Grep").validate({"pattern": "x", "-A": -1})
    with pytest.raises(InputError, match="`head_limit`"):
        harness.tool("Grep").validate({"pattern": "x", "head_limit": -5})


async def test_grep_runs_ripgrep_in_its_own_group_and_kills_it_when_cancelled(
    harness: Harness,
) -> None:
    fifo = harness.workspace / "never-written"
    os.mkfifo(fifo)  # ripgrep blocks reading a FIFO nobody writes to
    tool = harness.tool("Grep")
    value = tool.validate({"pattern": "x", "path": str(fifo)})
    registry = harness.session.processes
    with anyio.fail_after(CALL_TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tool.run, value, harness.context())
            while not registry.live or not all(c.pid for c in registry.live):  # noqa: ASYNC110
                await anyio.sleep(0.01)
            (child,) = registry.live
            assert os.getpgid(child.pid) == child.pid  # a session (and group) of its own
            tg.cancel_scope.cancel("abort")
    assert child.returncode is not None
    assert not registry.live
    with pytest.raises(ProcessLookupError):
        os.killpg(child.pid, 0)
