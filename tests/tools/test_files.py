"""Behaviour of Read, Write and Edit on real files (SPEC section 5).

Each test calls the tools the way the runtime does (``run_inline`` first, then ``run``)
through a real ``Session``; nothing is mocked.
"""

from __future__ import annotations

import codecs
import io
import os
import tracemalloc
from pathlib import Path

import anyio
import msgspec
import pytest
from files_harness import CALL_TIMEOUT, Harness
from hypothesis import given
from hypothesis import strategies as st

from stdio_executor.processes import ProcessRegistry
from stdio_executor.tools.base import InputError, ToolContext
from stdio_executor.tools.catalog import builtin_specs
from stdio_executor.tools.files.read import (
    EMPTY_NOTE,
    INLINE_MAX_BYTES,
    _number_lines,
    _number_text,
    _Numbered,
    _ReadCall,
)
from stdio_executor.tools.files.results import no_check
from stdio_executor.tools.files.write import CHANGED, NOT_READ
from stdio_executor.tools.session import Session

pytestmark = pytest.mark.anyio

BOTH_PATHS = pytest.mark.parametrize("inline", [True, False], ids=["inline", "thread"])


def numbered(*lines: str, start: int = 1) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))


def write_parts(path: Path, parts: list[str]) -> None:
    """Write a big file piece by piece (the test process's memory stays small too)."""
    with open(path, "w") as f:
        for part in parts:
            f.write(part)


# -------------------------------------------------------------------------------- Read


@BOTH_PATHS
async def test_read_numbers_lines_like_cat_n(harness: Harness, inline: bool) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("alpha\nbeta\n\ngamma\n")
    text = await harness.ok("Read", {"file_path": str(path)}, inline=inline)
    assert text == numbered("alpha", "beta", "", "gamma")


async def test_read_resolves_a_relative_path_against_the_working_directory(
    harness: Harness,
) -> None:
    (harness.workspace / "sub").mkdir()
    (harness.workspace / "sub" / "b.txt").write_text("relative\n")
    assert await harness.ok("Read", {"file_path": "sub/b.txt"}) == numbered("relative")


async def test_read_of_the_last_line_without_a_newline(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("one\ntwo")
    assert await harness.ok("Read", {"file_path": str(path)}) == numbered("one", "two")


@BOTH_PATHS
async def test_read_offset_and_limit_select_lines_and_say_more_follow(
    harness: Harness, inline: bool
) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 6)))
    text = await harness.ok(
        "Read", {"file_path": str(path), "offset": 2, "limit": 2}, inline=inline
    )
    assert text == (
        numbered("line 2", "line 3", start=2)
        + "\n\n(The file has more lines after line 3. Use offset=4 to read on.)"
    )
    tail = await harness.ok("Read", {"file_path": str(path), "offset": 4}, inline=inline)
    assert tail == numbered("line 4", "line 5", start=4)


async def test_read_offset_zero_reads_from_the_start(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("first\nsecond\n")
    assert await harness.ok("Read", {"file_path": str(path), "offset": 0}) == numbered(
        "first", "second"
    )


async def test_read_shows_the_first_2000_lines_by_default(harness: Harness) -> None:
    path = harness.workspace / "long.txt"
    path.write_text("".join(f"{i}\n" for i in range(1, 2501)))
    text = await harness.ok("Read", {"file_path": str(path)})
    lines = text.split("\n")
    assert lines[0] == "     1\t1"
    assert lines[1999] == "  2000\t2000"
    assert lines[2:] and "  2001\t2001" not in lines
    assert text.endswith("(The file has more lines after line 2000. Use offset=2001 to read on.)")


@BOTH_PATHS
async def test_read_cuts_lines_over_2000_characters_and_says_so(
    harness: Harness, inline: bool
) -> None:
    path = harness.workspace / "wide.txt"
    path.write_text("a" * 5000 + "\r\n" + "b" * 2000 + "\r\n" + "c" * 2001 + "\nend")
    text = await harness.ok("Read", {"file_path": str(path)}, inline=inline)
    assert text == numbered(
        "a" * 2000 + "… [line cut: 5,000 characters]",
        "b" * 2000,
        "c" * 2000 + "… [line cut: 2,001 characters]",
        "end",
    )


async def test_read_cuts_a_line_of_many_megabytes_in_a_large_file(harness: Harness) -> None:
    path = harness.workspace / "one-line.txt"
    write_parts(path, ["start\n", *["x" * 100_000] * 100, "\nafter\n"])
    text = await harness.ok("Read", {"file_path": str(path)})
    assert text == numbered("start", "x" * 2000 + "… [line cut: 10,000,000 characters]", "after")


async def test_read_drops_the_carriage_return_of_crlf_lines(harness: Harness) -> None:
    path = harness.workspace / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    assert await harness.ok("Read", {"file_path": str(path)}) == numbered("one", "two")


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (codecs.BOM_UTF8 + "héllo\nwörld\n".encode(), ("héllo", "wörld")),
        (codecs.BOM_UTF16_LE + "héllo\r\nwörld\r\n".encode("utf-16-le"), ("héllo", "wörld")),
        (codecs.BOM_UTF16_BE + "héllo\nwörld".encode("utf-16-be"), ("héllo", "wörld")),
        ("café\n".encode("latin-1"), ("café",)),
    ],
    ids=["utf-8-bom", "utf-16-le", "utf-16-be", "latin-1"],
)
async def test_read_decodes_the_file_s_encoding(
    harness: Harness, data: bytes, shown: tuple[str, ...]
) -> None:
    path = harness.workspace / "enc.txt"
    path.write_bytes(data)
    assert await harness.ok("Read", {"file_path": str(path)}) == numbered(*shown)


async def test_read_of_a_missing_file_suggests_a_near_name(harness: Harness) -> None:
    (harness.workspace / "config.yaml").write_text("x: 1\n")
    message = await harness.error("Read", {"file_path": "config.yml"})
    ws = harness.workspace
    assert message == (
        f"<tool_use_error>File does not exist: {ws}/config.yml. "
        f"Did you mean {ws}/config.yaml?</tool_use_error>"
    )


async def test_read_of_a_missing_file_with_no_near_name(harness: Harness) -> None:
    message = await harness.error("Read", {"file_path": "nothing-like-it.txt"})
    assert message == (
        f"<tool_use_error>File does not exist: {harness.workspace}/nothing-like-it.txt"
        "</tool_use_error>"
    )
    message = await harness.error("Read", {"file_path": "no/such/dir/a.txt"})
    assert "does not exist either" in message


async def test_read_of_a_directory_is_an_error(harness: Harness) -> None:
    message = await harness.error("Read", {"file_path": "."})
    assert f"{harness.workspace} is a directory, not a file" in message


async def test_read_of_a_binary_file_is_an_error(harness: Harness) -> None:
    path = harness.workspace / "blob.dat"
    path.write_bytes(b"ELF\x00\x01\x02" * 100)
    assert "appears to be a binary file" in await harness.error("Read", {"file_path": str(path)})
    archive = harness.workspace / "a.zip"
    archive.write_bytes(b"PK\x03\x04 no nul in the first bytes")
    assert "appears to be a binary file" in await harness.error("Read", {"file_path": str(archive)})


async def test_read_of_a_fifo_is_refused_without_blocking(harness: Harness) -> None:
    fifo = harness.workspace / "pipe"
    os.mkfifo(fifo)
    message = await harness.error("Read", {"file_path": str(fifo)})
    assert "is not a regular file" in message


async def test_read_of_an_empty_file_is_a_note_not_an_error(harness: Harness) -> None:
    path = harness.workspace / "empty.txt"
    path.write_bytes(b"")
    outcome = await harness.call("Read", {"file_path": str(path)})
    assert not outcome.is_error
    assert outcome.content == EMPTY_NOTE
    assert "exists but the contents are empty" in EMPTY_NOTE
    # It counts as read: the model may now overwrite it.
    await harness.ok("Write", {"file_path": str(path), "content": "now full\n"})


async def test_read_with_an_offset_past_the_end_is_an_error(harness: Harness) -> None:
    path = harness.workspace / "short.txt"
    path.write_text("a\nb\nc\n")
    message = await harness.error("Read", {"file_path": str(path), "offset": 4})
    assert message == (
        f"<tool_use_error>The file {path} has only 3 lines, fewer than the offset 4. "
        "Use a smaller offset.</tool_use_error>"
    )


@pytest.mark.parametrize(
    ("name", "data", "media_type"),
    [
        ("pic.png", b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(20), "image/png"),
        ("pic.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(20), "image/jpeg"),
        ("pic.gif", b"GIF89a" + bytes(20), "image/gif"),
        ("pic.webp", b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(20), "image/webp"),
        ("no-extension", b"\x89PNG\r\n\x1a\n" + bytes(20), "image/png"),
    ],
)
async def test_read_returns_an_image_as_an_image_block(
    harness: Harness, name: str, data: bytes, media_type: str
) -> None:
    import base64

    path = harness.workspace / name
    path.write_bytes(data)
    outcome = await harness.call("Read", {"file_path": str(path)})
    assert not outcome.is_error
    assert outcome.content == [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": media_type,
                "data": base64.b64encode(data).decode(),
            },
        }
    ]


async def test_read_of_a_png_that_is_not_an_image_is_an_error(harness: Harness) -> None:
    path = harness.workspace / "fake.png"
    path.write_text("I am text\n")
    message = await harness.error("Read", {"file_path": str(path)})
    assert "has a .png extension but is not a png, jpeg, gif or webp image" in message


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"file_path": "a", "offset": "ten"}, "offset"),
        ({"file_path": "a", "offset": 1.5}, "offset"),
        ({"file_path": "a", "pages": "1"}, "pages"),
        ({"file_path": "a", "limit": 0}, "limit"),
        ({"file_path": ""}, "file_path"),
        ({}, "file_path"),
    ],
)
async def test_read_refuses_bad_input_naming_the_field(
    harness: Harness, raw: dict[str, object], field: str
) -> None:
    with pytest.raises(InputError) as caught:
        harness.tool("Read").validate(raw)
    assert f"`{field}`" in str(caught.value)
    assert str(caught.value).startswith("<tool_use_error>InputValidationError: Read")


async def test_small_files_are_read_inline_and_large_ones_in_a_thread(harness: Harness) -> None:
    small = harness.workspace / "small.txt"
    small.write_text("x\n" * 10)
    large = harness.workspace / "large.txt"
    large.write_text("y" * 99 + "\n" * 1 + "z\n" * (INLINE_MAX_BYTES // 2))
    tool = harness.tool("Read")
    assert tool.run_inline(tool.validate({"file_path": str(small)}), harness.context())
    assert tool.run_inline(tool.validate({"file_path": str(large)}), harness.context()) is None
    text = await harness.ok("Read", {"file_path": str(large), "limit": 2})
    assert text.startswith(numbered("y" * 99, "z"))


@pytest.mark.parametrize("lines", [300, 30_000], ids=["inline", "streamed"])
async def test_a_read_over_the_size_limit_is_spilled_with_the_full_text(
    harness: Harness, lines: int
) -> None:
    path = harness.workspace / "big.txt"
    path.write_text("".join(f"line {i} {'x' * 40}\n" for i in range(1, lines + 1)))
    raw = {"file_path": str(path), "limit": lines}
    full = await harness.ok("Read", raw, tool=harness.tool("Read", max_result_bytes=10**9))
    outcome = await harness.call("Read", raw, tool=harness.tool("Read", max_result_bytes=5_000))
    assert not outcome.is_error
    assert outcome.truncated
    assert outcome.output_path is not None
    assert await anyio.Path(outcome.output_path).read_text() == full
    assert outcome.output_bytes == len(full.encode())
    assert isinstance(outcome.content, str)
    assert len(outcome.content) < 5_000
    assert outcome.content.startswith(numbered("line 1 " + "x" * 40))
    assert f"the full output is in {outcome.output_path}" in outcome.content


async def test_a_result_that_cannot_be_spilled_is_cut_and_says_why(harness: Harness) -> None:
    blocker = harness.workspace / "not-a-directory"
    blocker.write_text("")
    harness.session.spill_dir = str(blocker / "spill")
    path = harness.workspace / "big.txt"
    path.write_text("x\n" * 3000)
    outcome = await harness.call(
        "Read", {"file_path": str(path)}, tool=harness.tool("Read", max_result_bytes=1_000)
    )
    assert not outcome.is_error
    assert outcome.truncated
    assert outcome.output_path is None
    assert isinstance(outcome.content, str)
    assert outcome.content.startswith(numbered("x", "x"))
    assert "[output truncated; the rest could not be saved: " in outcome.content


async def test_a_read_of_a_huge_file_keeps_memory_flat(harness: Harness) -> None:
    lines = harness.workspace / "lines.txt"
    write_parts(lines, [("y" * 99 + "\n") * 1000] * 300)  # 30 MB, 300k lines
    one_line = harness.workspace / "one-line.txt"
    write_parts(one_line, ["z" * 100_000] * 200)  # 20 MB, no newline at all
    tracemalloc.start()
    try:
        tail = await harness.ok("Read", {"file_path": str(lines), "offset": 299_999})
        cut = await harness.ok("Read", {"file_path": str(one_line)})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tail == numbered("y" * 99, "y" * 99, start=299_999)
    assert cut == numbered("z" * 2000 + "… [line cut: 20,000,000 characters]")
    assert peak < 4 * 1024 * 1024, f"peak {peak:,} bytes"


async def test_a_read_of_a_huge_file_runs_beside_the_loop_and_stops_when_cancelled(
    harness: Harness,
) -> None:
    path = harness.workspace / "sparse.txt"
    path.write_text("text\n" * 20_000)
    os.truncate(path, 64 * 2**30)  # a 64 GiB hole: minutes to read through
    tool = harness.tool("Read")
    value = tool.validate({"file_path": str(path), "offset": 10**9})
    ctx = harness.context()
    assert tool.run_inline(value, ctx) is None
    finished = False
    ticks = 0

    async def read() -> None:
        nonlocal finished
        await tool.run(value, ctx)
        finished = True

    with anyio.fail_after(CALL_TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            while ticks < 20:  # the event loop keeps turning while the thread reads
                await anyio.sleep(0.01)
                ticks += 1
            tg.cancel_scope.cancel("abort")
    assert not finished
    assert str(path) not in harness.session.read_files


async def test_read_leaves_the_stamp_write_and_edit_check(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("content\n")
    await harness.ok("Read", {"file_path": "a.txt", "limit": 1})
    stamp = harness.session.read_files[str(path)]
    st = path.stat()
    assert (stamp.mtime_ns, stamp.size) == (st.st_mtime_ns, st.st_size)


# ------------------------------------------------------------------------------- Write


@BOTH_PATHS
async def test_write_creates_a_file_and_its_parent_directories(
    harness: Harness, inline: bool
) -> None:
    text = await harness.ok(
        "Write", {"file_path": "new/deep/file.txt", "content": "héllo\n"}, inline=inline
    )
    path = harness.workspace / "new" / "deep" / "file.txt"
    assert text == f"File created successfully at: {path}"
    assert path.read_bytes() == "héllo\n".encode()


async def test_write_refuses_to_overwrite_a_file_that_was_not_read(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("precious\n")
    message = await harness.error("Write", {"file_path": str(path), "content": "oops"})
    assert message == f"<tool_use_error>{NOT_READ}</tool_use_error>"
    assert path.read_text() == "precious\n"


@BOTH_PATHS
async def test_write_overwrites_a_file_read_in_this_session(harness: Harness, inline: bool) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("old\n")
    await harness.ok("Read", {"file_path": str(path)})
    text = await harness.ok("Write", {"file_path": str(path), "content": "new\n"}, inline=inline)
    assert text == f"The file {path} has been updated."
    assert path.read_text() == "new\n"


async def test_write_refuses_a_file_changed_since_it_was_read(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("old\n")
    await harness.ok("Read", {"file_path": str(path)})
    path.write_text("changed by someone else\n")
    message = await harness.error("Write", {"file_path": str(path), "content": "new\n"})
    assert message == f"<tool_use_error>{CHANGED}</tool_use_error>"
    assert path.read_text() == "changed by someone else\n"


async def test_write_renews_the_stamp_so_an_edit_may_follow(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    await harness.ok("Write", {"file_path": str(path), "content": "one two\n"})
    await harness.ok("Edit", {"file_path": str(path), "old_string": "two", "new_string": "2"})
    await harness.ok("Write", {"file_path": str(path), "content": "three\n"})
    assert path.read_text() == "three\n"


async def test_write_to_a_directory_is_an_error(harness: Harness) -> None:
    message = await harness.error("Write", {"file_path": ".", "content": "x"})
    assert "is a directory" in message


async def test_write_keeps_the_byte_order_mark_of_an_existing_file(harness: Harness) -> None:
    path = harness.workspace / "w.txt"
    path.write_bytes(codecs.BOM_UTF16_BE + "old\n".encode("utf-16-be"))
    await harness.ok("Read", {"file_path": str(path)})
    await harness.ok("Write", {"file_path": str(path), "content": "nëw\n"})
    assert path.read_bytes() == codecs.BOM_UTF16_BE + "nëw\n".encode("utf-16-be")


async def test_large_content_is_written_in_a_thread(harness: Harness) -> None:
    tool = harness.tool("Write")
    value = tool.validate({"file_path": "big.txt", "content": "z" * 100_000})
    assert tool.run_inline(value, harness.context()) is None
    await harness.ok("Write", {"file_path": "big.txt", "content": "z" * 100_000})
    assert (harness.workspace / "big.txt").read_text() == "z" * 100_000


# -------------------------------------------------------------------------------- Edit


async def read_then_edit(harness: Harness, path: Path, **edit: object) -> str:
    await harness.ok("Read", {"file_path": str(path)})
    return await harness.ok("Edit", {"file_path": str(path), **edit})


@BOTH_PATHS
async def test_edit_replaces_a_unique_string_and_shows_the_region(
    harness: Harness, inline: bool
) -> None:
    path = harness.workspace / "a.py"
    path.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    await harness.ok("Read", {"file_path": str(path)})
    text = await harness.ok(
        "Edit",
        {"file_path": str(path), "old_string": "line 10\n", "new_string": "ten\nTEN\n"},
        inline=inline,
    )
    assert text == (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a "
        "snippet of the edited file:\n"
        + numbered(
            *("line 6", "line 7", "line 8", "line 9"),
            *("ten", "TEN"),
            *("line 11", "line 12", "line 13", "line 14"),
            start=6,
        )
    )
    assert path.read_text().count("ten\nTEN\nline 11\n") == 1


async def test_edit_requires_a_read_first(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("hello\n")
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "hello", "new_string": "bye"}
    )
    assert message == f"<tool_use_error>{NOT_READ}</tool_use_error>"
    assert path.read_text() == "hello\n"


@pytest.mark.parametrize("change", ["content", "mtime"])
async def test_edit_is_refused_when_the_file_changed_after_the_read(
    harness: Harness, change: str
) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("hello\n")
    await harness.ok("Read", {"file_path": str(path)})
    if change == "content":
        path.write_text("hello, formatted\n")
    else:  # same size, touched
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    before = path.read_bytes()
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "hello", "new_string": "bye"}
    )
    assert message == f"<tool_use_error>{CHANGED}</tool_use_error>"
    assert path.read_bytes() == before
    # Reading it again lifts the refusal.
    await read_then_edit(harness, path, old_string="hello", new_string="bye")


async def test_edit_of_a_string_that_is_not_there(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("hello\n")
    await harness.ok("Read", {"file_path": str(path)})
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "absent", "new_string": "x"}
    )
    assert message == (
        "<tool_use_error>String to replace not found in file.\nString: absent</tool_use_error>"
    )


async def test_edit_of_a_string_found_several_times_says_how_many(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("x = 1\nx = 1\nx = 1\n")
    await harness.ok("Read", {"file_path": str(path)})
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert message.startswith(
        "<tool_use_error>Found 3 matches of the string to replace, but replace_all is false."
    )
    assert path.read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all_replaces_every_occurrence(harness: Harness) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("x = 1\ny\nx = 1\n")
    text = await read_then_edit(
        harness, path, old_string="x = 1", new_string="x = 2", replace_all=True
    )
    assert text.startswith(f"The file {path} has been updated: all 2 occurrences were replaced.")
    assert path.read_text() == "x = 2\ny\nx = 2\n"


async def test_edit_with_identical_strings_is_refused(harness: Harness) -> None:
    with pytest.raises(InputError, match="No changes to make"):
        harness.tool("Edit").validate({"file_path": "a", "old_string": "s", "new_string": "s"})


async def test_edit_keeps_crlf_line_endings_when_the_model_sends_lf(harness: Harness) -> None:
    path = harness.workspace / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await read_then_edit(harness, path, old_string="one\ntwo\n", new_string="1\n2\n2.5\n")
    assert path.read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"
    await read_then_edit(harness, path, old_string="three", new_string="3\n4")
    assert path.read_bytes() == b"1\r\n2\r\n2.5\r\n3\r\n4\r\n"


async def test_edit_leaves_an_lf_file_lf_when_the_model_sends_crlf(harness: Harness) -> None:
    path = harness.workspace / "unix.txt"
    path.write_bytes(b"one\ntwo\n")
    await read_then_edit(harness, path, old_string="one\r\ntwo", new_string="1\r\n2")
    assert path.read_bytes() == b"1\n2\n"


@pytest.mark.parametrize(
    ("encode", "name"),
    [
        (lambda s: codecs.BOM_UTF8 + s.encode("utf-8"), "utf-8-bom"),
        (lambda s: codecs.BOM_UTF16_LE + s.encode("utf-16-le"), "utf-16-le"),
        (lambda s: codecs.BOM_UTF16_BE + s.encode("utf-16-be"), "utf-16-be"),
        (lambda s: s.encode("utf-8"), "utf-8"),
    ],
)
async def test_edit_keeps_the_file_s_encoding(harness: Harness, encode: object, name: str) -> None:
    assert callable(encode)
    path = harness.workspace / f"{name}.txt"
    path.write_bytes(encode("grüße\r\nwelt\r\n"))
    await read_then_edit(harness, path, old_string="welt\n", new_string="wörld\nend\n")
    assert path.read_bytes() == encode("grüße\r\nwörld\r\nend\r\n")


async def test_edit_round_trips_bytes_that_are_not_utf8(harness: Harness) -> None:
    path = harness.workspace / "legacy.txt"
    path.write_bytes(b"caf\xe9 au lait\nbroken \xff\xfe byte\nend\n")
    shown = await harness.ok("Read", {"file_path": str(path)})
    assert shown.startswith(numbered("café au lait"))
    await harness.ok("Edit", {"file_path": str(path), "old_string": "end", "new_string": "fin"})
    await harness.ok("Edit", {"file_path": str(path), "old_string": "café", "new_string": "thé"})
    assert path.read_bytes() == b"th\xe9 au lait\nbroken \xff\xfe byte\nfin\n"


async def test_edit_refuses_text_the_file_s_encoding_cannot_hold(harness: Harness) -> None:
    path = harness.workspace / "legacy.txt"
    path.write_bytes(b"caf\xe9\n")
    await harness.ok("Read", {"file_path": str(path)})
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "caf", "new_string": "☕"}
    )
    assert "(latin-1) cannot hold" in message
    assert path.read_bytes() == b"caf\xe9\n"


async def test_edit_with_an_empty_old_string_creates_a_missing_file(harness: Harness) -> None:
    text = await harness.ok(
        "Edit", {"file_path": "made/new.txt", "old_string": "", "new_string": "fresh\n"}
    )
    path = harness.workspace / "made" / "new.txt"
    assert text == f"File created successfully at: {path}"
    assert path.read_text() == "fresh\n"
    # The creation renewed the stamp: a normal edit may follow.
    await harness.ok("Edit", {"file_path": str(path), "old_string": "fresh", "new_string": "ok"})


async def test_edit_with_an_empty_old_string_on_a_file_with_content_is_refused(
    harness: Harness,
) -> None:
    path = harness.workspace / "a.txt"
    path.write_text("content\n")
    await harness.ok("Read", {"file_path": str(path)})
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "", "new_string": "x"}
    )
    assert "file already exists" in message


async def test_edit_of_a_missing_file_suggests_a_near_name(harness: Harness) -> None:
    (harness.workspace / "main.py").write_text("x\n")
    message = await harness.error(
        "Edit", {"file_path": "mian.py", "old_string": "x", "new_string": "y"}
    )
    assert f"Did you mean {harness.workspace}/main.py?" in message


async def test_edit_of_a_binary_file_is_refused(harness: Harness) -> None:
    path = harness.workspace / "blob.bin"
    path.write_bytes(b"abc\x00def")
    harness.session.remember_read(str(path), path.stat())
    message = await harness.error(
        "Edit", {"file_path": str(path), "old_string": "abc", "new_string": "x"}
    )
    assert "binary" in message


# The two numbering paths (a whole small file in memory, a large file streamed) must agree.


def _both_numberings(text: str, offset: int, limit: int) -> tuple[str, str]:
    call = _ReadCall("f", offset, limit)
    total, whole = _number_text(text, call)
    out = _Numbered(10**9, lambda: "unused: nothing spills")
    seen, _ = _number_lines(io.StringIO(text, newline="\n"), call, out, no_check)
    # The stream stops one line past the window; a whole file knows its length.
    assert seen == min(total, offset + limit)
    spec = next(s for s in builtin_specs() if s.name == "Read")
    session = Session(workspace="/", spill_dir="/nonexistent", processes=ProcessRegistry())
    ctx = ToolContext("t", "/", session, progress=lambda _: None)
    streamed = out.result(msgspec.structs.replace(spec, max_result_bytes=10**9), ctx).content
    assert isinstance(streamed, str)
    return whole, streamed


@pytest.mark.parametrize(
    "text",
    [
        "a\nb\n",
        "a\r\nb\r\n",
        "a\nb",
        "a\r\nb\r",
        "\n\n\n",
        "x" * 2500 + "\r\ny\n" + "z" * 2001,
        "a\r\nb\nc\r\n" + "w" * 2000 + "\r\n",
        "x" * 2001 + "\r\nend\n" + "y" * 2001 + "\r",
        "x" * 2000 + "\r" + "y" * 70_000 + "\r\n" + "z" * 70_000 + "\r",
        "".join(f"{i}\n" for i in range(2100)),
    ],
)
@pytest.mark.parametrize(("offset", "limit"), [(1, 2000), (2, 1), (3, 5), (1, 1), (1998, 5)])
def test_whole_file_and_streamed_numbering_agree(text: str, offset: int, limit: int) -> None:
    whole, streamed = _both_numberings(text, offset, limit)
    assert whole == streamed


@given(
    text=st.text(alphabet="ab\r\n", max_size=40),
    offset=st.integers(1, 12),
    limit=st.integers(1, 12),
)
def test_whole_file_and_streamed_numbering_agree_on_any_text(
    text: str, offset: int, limit: int
) -> None:
    whole, streamed = _both_numberings(text, offset, limit)
    assert whole == streamed
