"""Line framing: numbering, CRLF, blank lines, and the size bound."""

from __future__ import annotations

from stdio_executor.runtime.framing import LineFramer, TooLong


def test_lines_split_across_chunks_are_joined_and_numbered() -> None:
    f = LineFramer(1000)
    assert f.feed(b'{"a":') == []
    assert f.feed(b'1}\n{"b":2}\n{"c"') == [(1, b'{"a":1}'), (2, b'{"b":2}')]
    assert f.eof() == [(3, b'{"c"')]


def test_crlf_is_accepted_and_blank_lines_are_skipped_but_counted() -> None:
    f = LineFramer(1000)
    assert f.feed(b"x\r\n\r\n   \n\ny\n") == [(1, b"x"), (5, b"y")]


def test_an_over_long_line_is_skipped_without_being_kept() -> None:
    f = LineFramer(10)
    assert f.feed(b"short\n" + b"x" * 8) == [(1, b"short")]
    assert f.feed(b"y" * 100_000) == []
    assert len(f._buf) == 0  # nothing of the long line is held
    assert f.feed(b"zz\nok\n") == [TooLong(2, 8 + 100_000 + 2), (3, b"ok")]


def test_an_over_long_line_inside_one_chunk_is_reported() -> None:
    f = LineFramer(4)
    assert f.feed(b"12345\nabc\n") == [TooLong(1, 5), (2, b"abc")]


def test_an_unterminated_over_long_line_is_reported_at_eof() -> None:
    f = LineFramer(4)
    assert f.feed(b"123456") == []
    assert f.eof() == [TooLong(1, 6)]


def test_a_long_unfinished_line_is_spooled_not_held_in_memory() -> None:
    f = LineFramer(1 << 30, spool_bytes=64)
    line = b'{"type":"drain","pad":"' + b"p" * 10_000 + b'"}'
    out: list[tuple[int, bytes] | TooLong] = []
    for i in range(0, len(line), 100):
        out += f.feed(line[i : i + 100])
        assert f.held_bytes <= 64 + 100
    out += f.feed(b"\r\nnext\n")
    assert out == [(1, line), (2, b"next")]
    assert f.held_bytes == 0


def test_an_over_long_line_never_holds_more_than_the_spool_threshold() -> None:
    f = LineFramer(50_000, spool_bytes=1_000)
    chunk = b"z" * 4_096
    fed = 0
    for _ in range(100):
        assert f.feed(chunk) == []
        fed += len(chunk)
        assert f.held_bytes <= 1_000
    assert f.feed(b"\nok\n") == [TooLong(1, fed), (2, b"ok")]


def test_a_spooled_line_that_crosses_the_limit_at_its_end_is_skipped() -> None:
    f = LineFramer(100, spool_bytes=10)
    assert f.feed(b"a" * 60) == []
    assert f.feed(b"b" * 60 + b"\nc\n") == [TooLong(1, 120), (2, b"c")]
    assert f.eof() == []


def test_an_unterminated_spooled_line_is_read_at_eof() -> None:
    f = LineFramer(1_000, spool_bytes=10)
    assert f.feed(b"q" * 500) == []
    assert f.eof() == [(1, b"q" * 500)]
