"""The session's HTTP/HTTPS proxy: the only way out of the sandbox's network namespace.

Owns: a unix socket on which each sandboxed call's child hands over a listening socket it
made on its own network namespace's 127.0.0.1 (tagged with the call's token); accepting
connections on those listeners until the call is released; reading one request head, and
either refusing it (403: the host is not in ``sandbox.network.allowedDomains``) or connecting
to the named host from the daemon's own network and relaying bytes both ways.
``CONNECT host:port`` (HTTPS and any TLS) and absolute-form ``GET http://host/...`` (plain
HTTP) are served; nothing else.
Must not: look inside TLS, cache, or run in the daemon's event loop (a slow upstream or a
flood of connections must not delay tool results): it runs its own asyncio loop in a daemon
thread.

Why listeners are handed over: a network namespace's loopback is not the host's, so a
proxy on the host's 127.0.0.1 is out of reach from inside; a socket created inside is
reachable there, and the daemon can ``accept`` on it from outside and connect onward through
the host's network. The namespace lives as long as its listener: ``release`` closes it when
the call ends.

Matching follows Claude Code: ``example.com`` matches that host only; ``*.example.com``
matches its subdomains, not the apex. Names are compared lower-case without a trailing dot;
an IP literal matches only an entry that spells that IP. A name let through by a wildcard
entry that resolves to a loopback or link-local address is refused (DNS rebinding onto the
host's own services); the address checked is the address connected to.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Sequence

__all__ = ["DomainProxy", "domain_allowed"]

log = logging.getLogger("stdio_executor")

_CONNECT_TIMEOUT_S = 30.0


def domain_allowed(host: str, allowed: Sequence[str]) -> bool:
    return _entry_for(host, allowed) is not None


def _entry_for(host: str, allowed: Sequence[str]) -> str | None:
    """The allowedDomains entry that lets ``host`` through, or None."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    for entry in allowed:
        if entry == "*":
            return entry
        if entry.startswith("*."):
            if name.endswith(entry[1:]) and len(name) > len(entry) - 1:
                return entry
        elif name == entry:
            return entry
    return None


def _local(address: str) -> bool:
    """An address of this machine or its link (loopback, link-local such as a cloud's
    metadata service at 169.254.169.254, unspecified): what the daemon's own network
    reaches that a sandboxed command's could not."""
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified


class DomainProxy:
    """Serves the listeners that sandboxed calls hand over, until ``close``."""

    def __init__(self, control_path: str, allowed: Sequence[str]) -> None:
        self.allowed = tuple(allowed)
        self.control_path = control_path
        self._control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._control.bind(control_path)
        self._control.listen(512)
        self._loop = asyncio.new_event_loop()
        self._servers: dict[bytes, list[asyncio.base_events.Server]] = {}
        self._thread = threading.Thread(target=self._loop.run_forever, name="sandbox-proxy")
        self._thread.daemon = True
        self._taker = threading.Thread(target=self._take_listeners, name="sandbox-proxy-in")
        self._taker.daemon = True
        self._closed = False
        self.refused: list[str] = []  # hosts refused, newest last (kept short)

    def start(self) -> None:
        self._thread.start()
        self._taker.start()

    def serve(self, token: bytes, listener: socket.socket) -> None:
        """Serve a listener the daemon holds itself (the session namespace's)."""
        self._loop.call_soon_threadsafe(self._serve_listener, token, listener)

    def release(self, token: bytes) -> None:
        """The call is over: stop serving its listener, so its namespace can go."""
        if not self._closed:
            self._loop.call_soon_threadsafe(self._drop, token)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(2)
        with contextlib.suppress(OSError):
            os.unlink(self.control_path)

    def _take_listeners(self) -> None:
        """Blocking accepts in a thread of their own: asyncio has no ``recvmsg`` for fds."""
        while not self._closed:
            try:
                conn, _ = self._control.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(5)
                    token, fds, _, _ = socket.recv_fds(conn, 64, 1)
                except OSError:
                    continue
            for fd in fds:
                os.set_inheritable(fd, False)
                listener = socket.socket(fileno=fd)
                try:
                    self._loop.call_soon_threadsafe(self._serve_listener, token, listener)
                except RuntimeError:  # closed meanwhile: the loop is gone
                    listener.close()

    def _serve_listener(self, token: bytes, listener: socket.socket) -> None:
        async def start() -> None:
            listener.setblocking(False)
            server = await asyncio.start_server(self._serve, sock=listener)
            self._servers.setdefault(token, []).append(server)

        self._loop.create_task(start())

    def _drop(self, token: bytes) -> None:
        for server in self._servers.pop(token, []):
            server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _address(self, host: str, port: int, entry: str) -> str | None:
        """The address to connect to, resolved once (a second lookup at connect time could
        answer differently), or None: a wildcard entry (``*``, ``*.example.com``) let the
        name through, and it resolves to a local address. Whoever controls a subdomain's
        DNS could otherwise point it at the host's own services (a database on
        127.0.0.1, the metadata service) through the proxy, which runs outside the
        sandbox's network; an entry that spells the name or the address is the user's."""
        addresses = await _resolve(host, port)
        if not addresses:
            raise OSError(f"{host} has no address")
        if entry.startswith("*") and any(_local(a) for a in addresses):
            return None
        return addresses[0]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
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
        entry = _entry_for(host, self.allowed) if host else None
        if entry is None:
            self.refused = [*self.refused[-9:], host]
            await _reply(
                writer,
                403,
                "Forbidden",
                f"stdio-executor sandbox: {host} is not in sandbox.network.allowedDomains",
            )
            return
        try:
            address = await asyncio.wait_for(self._address(host, port, entry), _CONNECT_TIMEOUT_S)
            if address is None:
                self.refused = [*self.refused[-9:], host]
                await _reply(
                    writer,
                    403,
                    "Forbidden",
                    f"stdio-executor sandbox: {host} resolves to an address of this machine "
                    f"or its link, and only a name listed exactly (not {entry}) may lead there",
                )
                return
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(address, port), _CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError, ValueError) as exc:
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


async def _resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


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
