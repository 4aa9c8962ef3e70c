"""The session's HTTP/HTTPS proxy: the only way out of the sandbox's network namespace.

Owns: accepting connections on the listening socket that lives inside the sandbox's network
namespace, reading one request head, and either refusing it (403, the host is not in
``sandbox.network.allowedDomains``) or connecting to the named host from the daemon's own
network and relaying bytes both ways. ``CONNECT host:port`` (HTTPS and any TLS) and
absolute-form ``GET http://host/...`` (plain HTTP) are served; nothing else.
Must not: look inside TLS, cache, or run in the daemon's event loop (a slow upstream or a
flood of connections must not delay tool results): it runs its own asyncio loop in a daemon
thread.

Matching follows Claude Code: ``example.com`` matches that host only; ``*.example.com``
matches its subdomains, not the apex. Names are compared lower-case without a trailing dot;
an IP literal matches only an entry that spells that IP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Sequence

__all__ = ["DomainProxy", "domain_allowed"]

log = logging.getLogger("stdio_executor")

_MAX_HEAD = 64 * 1024
_CONNECT_TIMEOUT_S = 30.0


def domain_allowed(host: str, allowed: Sequence[str]) -> bool:
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    for entry in allowed:
        if entry == "*":
            return True
        if entry.startswith("*."):
            if name.endswith(entry[1:]) and len(name) > len(entry) - 1:
                return True
        elif name == entry:
            return True
    return False


class DomainProxy:
    """Serves one listening socket until ``close``."""

    def __init__(self, listener: socket.socket, allowed: Sequence[str]) -> None:
        self.allowed = tuple(allowed)
        self._listener = listener
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sandbox-proxy", daemon=True)
        self.refused: list[str] = []  # hosts refused, newest last (kept short)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(5)

    def close(self) -> None:
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(2)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._listener.setblocking(False)
            server = loop.run_until_complete(asyncio.start_server(self._serve, sock=self._listener))
            self._ready.set()
            loop.run_forever()
            server.close()
        except Exception:  # pragma: no cover - logged; sandboxed calls then get no network
            log.exception("the sandbox's network proxy stopped")
        finally:
            self._ready.set()
            with contextlib.suppress(Exception):
                loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _MAX_HEAD:
            return
        line, _, rest = head.partition(b"\r\n")
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            await _reply(writer, 400, "Bad Request", "not an HTTP proxy request")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = _split_host_port(target, 443)
            forward = b""
        else:
            if not target.lower().startswith("http://"):
                await _reply(writer, 400, "Bad Request", "only http:// URLs and CONNECT")
                return
            authority, slash, path = target[7:].partition("/")
            host, port = _split_host_port(authority, 80)
            kept = [h for h in rest.split(b"\r\n") if h and not h.lower().startswith(b"proxy-")]
            forward = (
                f"{method} /{path if slash else ''} {version}\r\n".encode("latin-1")
                + b"".join(h + b"\r\n" for h in kept)
                + b"\r\n"
            )
        if not host or not domain_allowed(host, self.allowed):
            self.refused = [*self.refused[-9:], host]
            await _reply(
                writer,
                403,
                "Forbidden",
                f"stdio-executor sandbox: {host} is not in sandbox.network.allowedDomains",
            )
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), _CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            await _reply(writer, 502, "Bad Gateway", f"cannot reach {host}:{port}: {exc}")
            return
        try:
            if forward:
                up_writer.write(forward)
            else:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()


def _split_host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if "@" in host:  # credentials in the authority name nothing we check
        host = host.rpartition("@")[2]
    try:
        return host, int(port) if port else default
    except ValueError:
        return "", default


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while chunk := await src.read(65536):
            dst.write(chunk)
            await dst.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(Exception):
            if dst.can_write_eof():
                dst.write_eof()


async def _reply(writer: asyncio.StreamWriter, code: int, reason: str, text: str) -> None:
    body = (text + "\n").encode()
    writer.write(
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()
