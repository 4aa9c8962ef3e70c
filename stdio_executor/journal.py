"""The journal (``--journal FILE``): every command received and every event written.

Owns: the record format, the writer the runtime appends to, and reading a journal back (its
sessions, and the tools of the last session that started and never finished).
Must not: interpret commands or schedule anything; import anything heavier than msgspec
(the writer is on the daemon's start-up path).

One JSON object per line, appended, never rewritten. Every record has ``t`` (monotonic
seconds since this daemon opened the journal), ``wall`` (Unix time) and ``dir``::

    {"t":0.0,"wall":1763800000.123456,"dir":"session","msg":{"pid":41,"version":"0.1.0",...}}
    {"t":0.000412,"wall":...,"dir":"out","msg":{"type":"ready",...}}
    {"t":0.2031,"wall":...,"dir":"in","line":1,"msg":{"type":"add_tool",...}}
    {"t":0.2049,"wall":...,"dir":"in","line":2,"raw":"not json"}
    {"t":0.2051,"wall":...,"dir":"in","line":3,"skipped_bytes":70000000}
    {"t":0.2102,"wall":...,"dir":"out","msg":{"type":"tool_started",...}}

``session`` starts each run of the daemon; ``in`` is an input line as the host sent it
(``msg`` when it is JSON, else ``raw`` text, ``raw_b64`` for invalid UTF-8, or
``skipped_bytes`` for a line over the limit); ``out`` is an event exactly as written to
stdout. Records are buffered per batch and written to the file before the batch's events
reach stdout, so a journal always holds at least what the host could have seen, even after
SIGKILL. (They are not fsync'd: a power loss may cost the tail.)
"""

from __future__ import annotations

import base64
import fcntl
import logging
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import msgspec

__all__ = [
    "Journal",
    "JournalRecord",
    "Session",
    "last_session",
    "read_sessions",
    "unfinished_tools",
]

_CHUNK = 1 << 20
# A session record at the start of a line; nothing inside a record can look like this (a
# quote inside a JSON string is always escaped).
_SESSION_AT_LINE_START = re.compile(
    rb'^\{ *"t": *[-+0-9.eE]+ *, *"wall": *[-+0-9.eE]+ *, *"dir": *"session"', re.MULTILINE
)
_json = msgspec.json.Encoder()
log = logging.getLogger("stdio_executor")


class Journal:
    """Appends records to the journal file; ``flush`` writes what is buffered.

    The file is locked (``flock``) while the daemon runs: two daemons writing one journal
    would make "the last session" meaningless, so the second one is refused.
    """

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise OSError(f"{self.path} is in use by another stdio-executor") from None
        self._t0 = time.monotonic()
        self._w0 = time.time()
        self._buf = bytearray()
        self._failed = False

    def _head(self, kind: bytes) -> bytes:
        t = time.monotonic() - self._t0
        return b'{"t":%.6f,"wall":%.6f,"dir":"%s"' % (t, self._w0 + t, kind)

    def session(self, info: dict[str, Any]) -> None:
        self._buf += self._head(b"session") + b',"msg":' + _json.encode(info) + b"}\n"

    def record_out(self, line: bytes) -> None:
        """An encoded event line (``\\n``-terminated), as written to stdout."""
        self._buf += self._head(b"out") + b',"msg":' + line[:-1] + b"}\n"

    def record_in(self, lineno: int, line: bytes, is_json: bool) -> None:
        """An input line; ``is_json`` says the decoder parsed it as JSON, so it is spliced in
        as it is (no second encode)."""
        head = self._head(b"in") + b',"line":%d' % lineno
        if is_json:
            self._buf += head + b',"msg":' + line + b"}\n"
            return
        try:
            text: dict[str, Any] = {"raw": line.decode("utf-8")}
        except UnicodeDecodeError:
            text = {"raw_b64": base64.b64encode(line).decode("ascii")}
        self._buf += head + b"," + _json.encode(text)[1:] + b"\n"

    def record_skipped(self, lineno: int, size: int) -> None:
        self._buf += self._head(b"in") + b',"line":%d,"skipped_bytes":%d}\n' % (lineno, size)

    def flush(self) -> None:
        if not self._buf:
            return
        data = self._buf
        self._buf = bytearray()
        if self._failed:
            return
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            # A full disk must not stop the tools: say so once and go on without a journal.
            log.error("cannot write the journal %s (%s); journaling stops", self.path, exc)
            self._failed = True

    def close(self) -> None:
        self.flush()
        os.close(self._fd)


# ---------------------------------------------------------------------------- reading


class JournalRecord(msgspec.Struct, frozen=True, kw_only=True):
    t: float
    dir: str
    wall: float | None = None
    line: int | None = None
    msg: Any = None
    raw: str | None = None
    raw_b64: str | None = None
    skipped_bytes: int | None = None

    def input_bytes(self) -> bytes | None:
        """The input line as the host sent it (``None`` for a line over the limit)."""
        if self.raw is not None:
            return self.raw.encode("utf-8")
        if self.raw_b64 is not None:
            return base64.b64decode(self.raw_b64)
        if self.msg is not None:
            return _json.encode(self.msg)
        return None


class Session(msgspec.Struct):
    """One run of the daemon: its ``session`` record's ``msg`` and what followed it."""

    info: dict[str, Any] = msgspec.field(default_factory=dict)
    records: list[JournalRecord] = msgspec.field(default_factory=list)


_record_decoder = msgspec.json.Decoder(JournalRecord)


def _parse(data: bytes) -> Iterator[JournalRecord]:
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            yield _record_decoder.decode(line)
        except msgspec.DecodeError:
            continue  # a torn last line (power loss) or a foreign line: skip it


def read_sessions(path: str) -> list[Session]:
    """Every session of a journal, oldest first (records before any ``session`` record, as
    from a hand-written journal, form a session of their own)."""
    with open(path, "rb") as f:
        data = f.read()
    sessions: list[Session] = []
    for record in _parse(data):
        if record.dir == "session":
            sessions.append(Session(info=dict(record.msg or {})))
        elif not sessions:
            sessions.append(Session())
        if record.dir != "session":
            sessions[-1].records.append(record)
    return sessions


def last_session(path: str) -> Session | None:
    """The last session of a journal, reading the file backwards only as far as needed."""
    with open(path, "rb") as f:
        pos = f.seek(0, os.SEEK_END)
        tail = b""
        while True:
            start = None
            for match in _SESSION_AT_LINE_START.finditer(tail):
                at = match.start()
                if at > 0 or pos == 0:
                    start = at
                else:  # the chunk began here: a line start only if a newline precedes it
                    f.seek(pos - 1)
                    if f.read(1) == b"\n":
                        start = at
            if start is not None or pos == 0:
                break
            step = min(_CHUNK, pos)
            pos -= step
            f.seek(pos)
            tail = f.read(step) + tail
    if start is None and not tail.strip():
        return None
    session = Session()
    for record in _parse(tail[start or 0 :]):
        if record.dir == "session":
            session.info = dict(record.msg or {})
        else:
            session.records.append(record)
    return session


def unfinished_tools(session: Session) -> list[dict[str, Any]]:
    """Tools that started and got neither a ``tool_result`` nor a ``discarded``.

    Each is ``{"tool_use_id", "name", "input", "turn"}`` (the input from the ``add_tool`` that
    preceded its start), in the order they started.
    """
    inputs: dict[str, dict[str, Any]] = {}
    started: dict[tuple[int | None, str], dict[str, Any]] = {}
    for record in session.records:
        msg = record.msg
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if record.dir == "in" and kind == "add_tool":
            use = msg.get("tool_use")
            if isinstance(use, dict) and isinstance(use.get("id"), str):
                raw = use.get("input")
                inputs[use["id"]] = raw if isinstance(raw, dict) else {}
        elif record.dir != "out":
            continue
        elif kind == "tool_started":
            tool_id = str(msg.get("tool_use_id"))
            started[(msg.get("turn"), tool_id)] = {
                "tool_use_id": tool_id,
                "name": str(msg.get("name")),
                "input": inputs.get(tool_id, {}),
                "turn": msg.get("turn"),
            }
        elif kind == "tool_result":
            meta = msg.get("meta")
            turn = meta.get("turn") if isinstance(meta, dict) else None
            started.pop((turn, str(msg.get("tool_use_id"))), None)
        elif kind == "discarded":
            for tool_id in msg.get("tool_use_ids") or ():
                started.pop((msg.get("turn"), str(tool_id)), None)
    return list(started.values())
