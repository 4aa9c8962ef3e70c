"""MultiEdit, NotebookEdit and LS against real files, driven through the tools themselves.

Each tool's rules as sentences: MultiEdit writes all of its edits or none, with Edit's
read-before-edit rule, encodings and line endings; NotebookEdit keeps a notebook valid
nbformat 4 (checked with the ``nbformat`` package's own validator); LS draws Claude Code's
tree, skips what it should and stops at its cap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import nbformat as _nbformat
import pytest
from files_harness import Harness

from stdio_executor.tools.base import InputError
from stdio_executor.tools.files import listing
from stdio_executor.tools.files.listing import MAX_ENTRIES, NOTE

pytestmark = pytest.mark.anyio

# nbformat has no type hints; its validator is what matters here.
nbformat: Any = _nbformat


async def read(harness: Harness, path: Path) -> None:
    await harness.ok("Read", {"file_path": str(path)})


# ----------------------------------------------------------------------------- MultiEdit


async def test_multiedit_applies_every_edit_in_order(harness: Harness) -> None:
    path = harness.workspace / "a.py"
    path.write_text("alpha = 1\nbeta = 2\nalpha += beta\n")
    await read(harness, path)
    text = await harness.ok(
        "MultiEdit",
        {
            "file_path": str(path),
            "edits": [
                {"old_string": "beta = 2", "new_string": "gamma = 2"},
                {"old_string": "alpha", "new_string": "delta", "replace_all": True},
                {"old_string": "+= beta", "new_string": "+= gamma"},
            ],
        },
    )
    assert path.read_text() == "delta = 1\ngamma = 2\ndelta += gamma\n"
    assert text == (
        f"Applied 3 edits to {path}:\n"
        '1. Replaced "beta = 2" with "gamma = 2"\n'
        '2. Replaced "alpha" with "delta" (2 occurrences)\n'
        '3. Replaced "+= beta" with "+= gamma"'
    )


async def test_multiedit_writes_nothing_when_a_later_edit_fails(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("one\ntwo\n")
    await read(harness, path)
    error = await harness.error(
        "MultiEdit",
        {
            "file_path": str(path),
            "edits": [
                {"old_string": "one", "new_string": "ONE"},
                {"old_string": "three", "new_string": "THREE"},
            ],
        },
    )
    assert "String to replace not found in file.\nString: three" in error
    assert "(edit 2 of 2; none of the edits was applied)" in error
    assert path.read_text() == "one\ntwo\n"


async def test_multiedit_refuses_an_old_string_inside_an_earlier_new_string(
    harness: Harness,
) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("x\n")
    await read(harness, path)
    error = await harness.error(
        "MultiEdit",
        {
            "file_path": str(path),
            "edits": [
                {"old_string": "x", "new_string": "x_suffix"},
                {"old_string": "suffix", "new_string": "tail"},
            ],
        },
    )
    assert "old_string is a substring of a new_string from a previous edit" in error
    assert path.read_text() == "x\n"


async def test_multiedit_needs_a_read_and_an_unchanged_file(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("one\n")
    edit = {"file_path": str(path), "edits": [{"old_string": "one", "new_string": "1"}]}
    error = await harness.error("MultiEdit", edit)
    assert "File has not been read yet" in error
    await read(harness, path)
    path.write_text("one!\n")  # changed behind the model's back (another size)
    error = await harness.error("MultiEdit", edit)
    assert "has been modified since it was read" in error
    await read(harness, path)
    await harness.ok("MultiEdit", edit)
    # The stamp is renewed: a second MultiEdit (or an Edit) follows without a Read.
    await harness.ok(
        "MultiEdit", {"file_path": str(path), "edits": [{"old_string": "1", "new_string": "2"}]}
    )
    assert path.read_text() == "2!\n"


async def test_multiedit_keeps_crlf_a_bom_and_the_mode(harness: Harness) -> None:
    path = harness.workspace / "w.txt"
    path.write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")
    path.chmod(0o640)
    await read(harness, path)
    await harness.ok(
        "MultiEdit",
        {
            "file_path": str(path),
            "edits": [{"old_string": "line one\nline two", "new_string": "first\nsecond"}],
        },
    )
    assert path.read_bytes() == b"\xef\xbb\xbffirst\r\nsecond\r\n"
    assert path.stat().st_mode & 0o777 == 0o640


async def test_multiedit_edits_a_symlinks_target_and_keeps_hard_links(harness: Harness) -> None:
    target = harness.workspace / "target.txt"
    target.write_text("old\n")
    link = harness.workspace / "link.txt"
    link.symlink_to(target)
    await read(harness, link)
    await harness.ok(
        "MultiEdit", {"file_path": str(link), "edits": [{"old_string": "old", "new_string": "new"}]}
    )
    assert link.is_symlink() and target.read_text() == "new\n"

    hard = harness.workspace / "hard.txt"
    os.link(target, hard)
    await read(harness, hard)
    await harness.ok(
        "MultiEdit", {"file_path": str(hard), "edits": [{"old_string": "new", "new_string": "x"}]}
    )
    assert target.read_text() == "x\n"
    assert (await anyio.Path(target).stat()).st_ino == (await anyio.Path(hard).stat()).st_ino


async def test_multiedit_creates_a_file_from_an_empty_old_string(harness: Harness) -> None:
    path = harness.workspace / "sub" / "new.txt"
    text = await harness.error(
        "MultiEdit",
        {
            "file_path": str(path),
            "edits": [
                {"old_string": "", "new_string": "hello world\n"},
                {"old_string": "", "new_string": "more"},
            ],
        },
    )
    assert "Cannot create new file - file already exists." in text
    assert not path.exists()
    text = await harness.ok(
        "MultiEdit",
        {"file_path": str(path), "edits": [{"old_string": "", "new_string": "hello world\n"}]},
    )
    assert path.read_text() == "hello world\n"
    assert text == f'Applied 1 edit to {path}:\n1. Created the file with "hello world\\n"'


async def test_multiedit_errors_for_a_missing_file_and_same_strings(harness: Harness) -> None:
    missing = harness.workspace / "nope.txt"
    error = await harness.error(
        "MultiEdit", {"file_path": str(missing), "edits": [{"old_string": "a", "new_string": "b"}]}
    )
    assert f"File does not exist: {missing}" in error
    tool = harness.tool("MultiEdit")
    with pytest.raises(InputError, match=r"No changes to make.*edits\[1\]"):
        tool.validate(
            {
                "file_path": str(missing),
                "edits": [
                    {"old_string": "a", "new_string": "b"},
                    {"old_string": "c", "new_string": "c"},
                ],
            }
        )
    with pytest.raises(InputError, match="edits"):
        tool.validate({"file_path": str(missing), "edits": []})


# -------------------------------------------------------------------------- NotebookEdit


def make_notebook(path: Path, minor: int = 5) -> dict[str, Any]:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title", id="intro"),
        nbformat.v4.new_code_cell("x = 1\nx", id="calc"),
    ]
    nb.cells[1].outputs = [
        nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1)
    ]
    nb.cells[1].execution_count = 1
    if minor < 5:
        for cell in nb.cells:
            del cell["id"]
    nbformat.write(nb, str(path))
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def load_valid(path: Path) -> Any:
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)  # raises if the file is not valid nbformat
    return nb


async def test_notebook_replace_clears_outputs_and_stays_valid(harness: Harness) -> None:
    path = harness.workspace / "nb.ipynb"
    make_notebook(path)
    await read(harness, path)
    text = await harness.ok(
        "NotebookEdit", {"notebook_path": str(path), "cell_id": "calc", "new_source": "y = 2"}
    )
    assert text == "Updated cell calc with y = 2"
    nb = load_valid(path)
    assert nb.cells[1].source == "y = 2"
    assert (nb.cells[1].outputs, nb.cells[1].execution_count) == ([], None)


async def test_notebook_insert_after_a_cell_and_at_the_top(harness: Harness) -> None:
    path = harness.workspace / "nb.ipynb"
    make_notebook(path)
    await read(harness, path)
    text = await harness.ok(
        "NotebookEdit",
        {
            "notebook_path": str(path),
            "cell_id": "intro",
            "new_source": "Some words",
            "cell_type": "markdown",
            "edit_mode": "insert",
        },
    )
    nb = load_valid(path)
    assert [c.source for c in nb.cells] == ["# Title", "Some words", "x = 1\nx"]
    new_id = nb.cells[1].id
    assert text == f"Inserted cell {new_id} with Some words"
    await harness.ok(
        "NotebookEdit",
        {
            "notebook_path": str(path),
            "new_source": "import os",
            "cell_type": "code",
            "edit_mode": "insert",
        },
    )
    nb = load_valid(path)
    assert nb.cells[0].source == "import os" and nb.cells[0].cell_type == "code"
    assert len({c.id for c in nb.cells}) == 4


async def test_notebook_delete_by_index_id(harness: Harness) -> None:
    path = harness.workspace / "nb.ipynb"
    make_notebook(path)
    await read(harness, path)
    text = await harness.ok(
        "NotebookEdit",
        {"notebook_path": str(path), "cell_id": "cell-0", "new_source": "", "edit_mode": "delete"},
    )
    assert text == "Deleted cell intro"
    assert [c.id for c in load_valid(path).cells] == ["calc"]


async def test_notebook_type_change_keeps_it_valid(harness: Harness) -> None:
    path = harness.workspace / "nb.ipynb"
    make_notebook(path)
    await read(harness, path)
    await harness.ok(
        "NotebookEdit",
        {
            "notebook_path": str(path),
            "cell_id": "calc",
            "new_source": "now prose",
            "cell_type": "markdown",
        },
    )
    cell = load_valid(path).cells[1]
    assert cell.cell_type == "markdown" and "outputs" not in cell


async def test_notebook_before_4_5_gets_no_cell_ids(harness: Harness) -> None:
    path = harness.workspace / "old.ipynb"
    make_notebook(path, minor=4)
    await read(harness, path)
    text = await harness.ok(
        "NotebookEdit",
        {
            "notebook_path": str(path),
            "cell_id": "cell-1",
            "new_source": "z = 3",
            "cell_type": "code",
            "edit_mode": "insert",
        },
    )
    assert text == "Inserted cell cell-2 with z = 3"
    nb = load_valid(path)
    assert all("id" not in c for c in nb.cells)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cell_id": "nope"}, 'Cell with ID "nope" not found in notebook.'),
        ({"cell_id": "cell-9"}, "Cell with index 9 does not exist in notebook."),
    ],
)
async def test_notebook_errors_for_unknown_cells(
    harness: Harness, raw: dict[str, Any], message: str
) -> None:
    path = harness.workspace / "nb.ipynb"
    make_notebook(path)
    before = path.read_bytes()
    await read(harness, path)
    error = await harness.error(
        "NotebookEdit", {"notebook_path": str(path), "new_source": "s", **raw}
    )
    assert error == f"<tool_use_error>{message}</tool_use_error>"
    assert path.read_bytes() == before


async def test_notebook_errors_for_files_that_are_not_notebooks(harness: Harness) -> None:
    text_file = harness.workspace / "a.txt"
    text_file.write_text("x")
    error = await harness.error(
        "NotebookEdit", {"notebook_path": str(text_file), "cell_id": "a", "new_source": "s"}
    )
    assert "File must be a Jupyter notebook (.ipynb file)" in error
    missing = harness.workspace / "none.ipynb"
    error = await harness.error(
        "NotebookEdit", {"notebook_path": str(missing), "cell_id": "a", "new_source": "s"}
    )
    assert error == "<tool_use_error>Notebook file does not exist.</tool_use_error>"
    broken = harness.workspace / "broken.ipynb"
    broken.write_text("{not json")
    error = await harness.error(
        "NotebookEdit", {"notebook_path": str(broken), "cell_id": "a", "new_source": "s"}
    )
    assert "File has not been read yet" in error
    await read(harness, broken)
    error = await harness.error(
        "NotebookEdit", {"notebook_path": str(broken), "cell_id": "a", "new_source": "s"}
    )
    assert error == "<tool_use_error>Notebook is not valid JSON.</tool_use_error>"


def test_notebook_input_rules(harness: Harness) -> None:
    tool = harness.tool("NotebookEdit")
    with pytest.raises(InputError, match="Cell type is required when using edit_mode=insert"):
        tool.validate({"notebook_path": "/x.ipynb", "new_source": "", "edit_mode": "insert"})
    with pytest.raises(InputError, match="Cell ID must be specified"):
        tool.validate({"notebook_path": "/x.ipynb", "new_source": ""})
    with pytest.raises(InputError, match="edit_mode"):
        tool.validate({"notebook_path": "/x.ipynb", "new_source": "", "edit_mode": "append"})


# ------------------------------------------------------------------------------------ LS


async def test_ls_draws_a_sorted_tree_without_hidden_and_ignored_entries(
    harness: Harness,
) -> None:
    ws = harness.workspace
    for rel in ("b.txt", "A.md", "src/main.py", "src/util/x.py", "src/debug.log", ".git/HEAD"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    (ws / "src" / "__pycache__").mkdir()
    (ws / "empty").mkdir()
    (ws / "loop").symlink_to(ws)  # listed, never entered
    text = await harness.ok("LS", {"path": str(ws), "ignore": ["*.log"]})
    assert text == (
        f"- {ws}/\n"
        "  - A.md\n"
        "  - b.txt\n"
        "  - empty/\n"
        "  - loop\n"
        "  - src/\n"
        "    - main.py\n"
        "    - util/\n"
        "      - x.py\n"
        f"\n{NOTE}"
    )


async def test_ls_ignore_patterns_can_name_paths(harness: Harness) -> None:
    ws = harness.workspace
    (ws / "build" / "out").mkdir(parents=True)
    (ws / "keep.txt").write_text("")
    text = await harness.ok("LS", {"path": str(ws), "ignore": ["build"]})
    assert "build" not in text and "keep.txt" in text


async def test_ls_caps_the_listing_shallowest_first(harness: Harness) -> None:
    ws = harness.workspace
    (ws / "deep").mkdir()
    for i in range(MAX_ENTRIES + 50):
        (ws / f"f{i:04d}").write_text("")
    (ws / "deep" / "inner.txt").write_text("")
    text = await harness.ok("LS", {"path": str(ws)})
    assert text.startswith(f"There are more than {MAX_ENTRIES} files and directories")
    assert text.count("\n  - ") == MAX_ENTRIES
    assert "inner.txt" not in text  # the deeper level did not fit


async def test_ls_errors(harness: Harness) -> None:
    missing = harness.workspace / "nope"
    error = await harness.error("LS", {"path": str(missing)})
    assert f"Directory does not exist: {missing}" in error
    file = harness.workspace / "f.txt"
    file.write_text("")
    error = await harness.error("LS", {"path": str(file)})
    assert "is not a directory" in error


async def test_ls_resolves_a_relative_path_against_the_working_directory(
    harness: Harness,
) -> None:
    (harness.workspace / "sub").mkdir()
    (harness.workspace / "sub" / "f").write_text("")
    text = await harness.ok("LS", {"path": "sub"})
    assert text.startswith(f"- {harness.workspace}/sub/\n  - f\n")


def test_ls_walks_every_level_by_descriptor_breadth_first(tmp_path: Path) -> None:
    """Subdirectories of several parents, several levels down: each is entered relative to
    its parent's descriptor (reopened from the root when the walk moves to another parent)
    and listed once, shallowest first."""
    for rel in ("a/p/1.txt", "a/q/2.txt", "b/r/3.txt", "b/r/s/4.txt", "c.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    entries, truncated = listing._walk(str(tmp_path), (), lambda: None)
    assert not truncated
    assert entries == [
        "a/", "b/", "c.txt",
        "a/p/", "a/q/", "b/r/",
        "a/p/1.txt", "a/q/2.txt", "b/r/3.txt", "b/r/s/",
        "b/r/s/4.txt",
    ]  # fmt: skip
