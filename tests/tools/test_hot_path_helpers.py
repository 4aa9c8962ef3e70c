"""Hot-path helpers give exactly what the plain forms they replace give.

Read's ``_numbered`` (the numbered lines of a small file) and ``_extension`` (a path's
lower-case extension), ``ToolContext.resolve``'s shortcut past ``normpath`` and
``Confinement``'s prepared roots were rewritten for speed (bench/NOTES.md section 18); each
is compared here with the plain form on generated input, and a whole file's numbering is
checked past the precomputed prefixes and with CRLF endings.
"""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from stdio_executor.confine import Confinement, inside
from stdio_executor.tools.base import ToolContext, normalized
from stdio_executor.tools.files import read, text

lines_st = st.lists(st.text(alphabet="ab\t\r é", max_size=8), max_size=40)


@settings(max_examples=300, deadline=None)
@given(lines=lines_st, first=st.integers(min_value=1, max_value=2100))
def test_numbered_is_cat_n_of_the_window(lines: list[str], first: int) -> None:
    expected = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))
    assert read._numbered(lines, first) == expected


path_st = st.text(alphabet="/.aB_", max_size=12)


@settings(max_examples=500, deadline=None)
@given(path=path_st)
def test_extension_is_splitexts(path: str) -> None:
    assert read._extension(path) == os.path.splitext(path)[1].lower()


def test_extension_examples() -> None:
    cases = {
        "/w/small.txt": ".txt",
        "/w/.bashrc": "",
        "/w/..x": "",
        "/w/a..b": ".b",
        "/w.d/file": "",
        "/w/ARCHIVE.TAR.GZ": ".gz",
        "/w/trailing.": ".",
        "noslash.PNG": ".png",
    }
    assert {p: read._extension(p) for p in cases} == cases


def test_a_whole_file_is_numbered_past_the_prefix_table_and_without_cr() -> None:
    """``_number_text`` on a 2,500-line file: windows inside, across and past the 2,000
    precomputed prefixes, with a CR stripped from the CRLF lines."""
    text = "".join(f"line {n}" + ("\r\n" if n % 7 == 0 else "\n") for n in range(1, 2501))
    for offset, limit in [(1, 2000), (5, 3), (1990, 20), (2400, 500), (2500, 1)]:
        call = read._ReadCall("f", offset, limit)
        total, numbered = read._number_text(text, call)
        assert total == 2500
        shown = range(offset, min(offset + limit, 2501))
        assert numbered == "\n".join(f"{n:>6}\tline {n}" for n in shown)


@settings(max_examples=500, deadline=None)
@given(tail=st.text(alphabet="/.a", max_size=12))
def test_resolve_of_an_absolute_path_is_normpath(tail: str) -> None:
    ctx = ToolContext(tool_use_id="t", cwd="/w", session=None, progress=print)  # type: ignore[arg-type]
    path = "/" + tail
    assert ctx.resolve(path) == os.path.normpath(path)
    assert normalized(path) == os.path.normpath(path)
    assert normalized(tail) == os.path.normpath(tail)  # relative: always normpath's answer


roots_st = st.lists(st.sampled_from(["/w", "/w/", "/W/x", "/", "/wx", "/w/sub"]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    roots=roots_st,
    given_roots=roots_st,
    path=st.sampled_from(["/w", "/w/a", "/wx/a", "/W/x/y", "/w/x", "/", "/other", "/w/sub"]),
    ignore_case=st.booleans(),
)
def test_confinement_contains_is_inside(
    roots: list[str], given_roots: list[str], path: str, ignore_case: bool
) -> None:
    confinement = Confinement(roots, ignore_case, given_roots)
    expected = inside(path, confinement.roots, ignore_case) or inside(
        path, confinement.given, ignore_case
    )
    assert confinement.contains(path) == expected


def test_image_type_still_knows_every_magic_and_nothing_else() -> None:
    """``image_type`` first rules out a file by its first byte; every magic still starts
    with one of the bytes it lets through, and text starting with those is not an image."""
    images = {
        b"\x89PNG\r\n\x1a\n rest": "image/png",
        b"\xff\xd8\xff\xe0 rest": "image/jpeg",
        b"GIF87a rest": "image/gif",
        b"GIF89a rest": "image/gif",
        b"RIFF\x00\x00\x00\x00WEBP rest": "image/webp",
    }
    assert {head: text.image_type(head) for head in images} == images
    for head in [b"", b"G", b"GIF", b"RIFF", b"Readme\n", b"\x89PNG", b"\xff", b"plain text"]:
        assert text.image_type(head) is None, head


def test_looks_binary_sees_a_nul_only_within_the_sniffed_prefix() -> None:
    sniff = text._NUL_SNIFF
    assert text.looks_binary(b"ab\0cd", text.UTF_8, ".txt")
    assert not text.looks_binary(b"abcd", text.UTF_8, ".txt")
    assert text.looks_binary(b"a" * (sniff - 1) + b"\0", text.UTF_8, ".txt")
    assert not text.looks_binary(b"a" * sniff + b"\0", text.UTF_8, ".txt")
    assert text.looks_binary(b"abcd", text.UTF_8, ".exe")  # by extension
