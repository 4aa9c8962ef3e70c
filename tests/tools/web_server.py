"""A small HTTP server on 127.0.0.1 for the WebFetch tests (never any other address).

Owns: the pages the tests fetch (HTML, text, JSON, an image, errors, redirects within the
site and to another site, a redirect loop, an oversized body, a slow page) and a record of
the paths requested, so a test can tell that a redirect to another site was not followed.
Must not: be reached from outside the machine: it binds 127.0.0.1 only, and stops with the
test.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["HTML", "PNG", "WebServer", "web_server"]

HTML = """<!doctype html>
<html><head><title>Tab title</title><style>body { color: red }</style>
<script>var secret = "do not show";</script></head>
<body>
<h1>Release notes</h1>
<p>Version <strong>2.0</strong> adds <a href="/docs">docs</a>.</p>
<ul><li>first</li><li>second</li></ul>
<pre><code>print("hi")</code></pre>
</body></html>
"""
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


class WebServer:
    def __init__(self) -> None:
        self.requested: list[str] = []
        self.user_agents: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                server.requested.append(self.path)
                server.user_agents.append(self.headers.get("User-Agent", ""))
                server.route(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def route(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path
        if path == "/page.html":
            self.send(h, 200, "text/html; charset=utf-8", HTML.encode())
        elif path == "/big.html":
            body = "<p>" + "word " * 60_000 + "</p>"
            self.send(h, 200, "text/html", body.encode())
        elif path == "/notes.txt":
            self.send(h, 200, "text/plain; charset=latin-1", "caf\xe9 au lait\n".encode("latin-1"))
        elif path == "/data.json":
            self.send(h, 200, "application/json", b'{"answer": 42}')
        elif path == "/image.png":
            self.send(h, 200, "image/png", PNG)
        elif path == "/missing":
            self.send(h, 404, "text/html", b"<p>gone</p>")
        elif path == "/moved":
            self.redirect(h, 302, "/page.html")
        elif path == "/elsewhere":
            self.redirect(h, 301, "http://127.0.0.1:9/landing")
        elif path == "/loop":
            self.redirect(h, 307, "/loop")
        elif path == "/declared-huge":
            h.send_response(200)
            h.send_header("Content-Type", "text/plain")
            h.send_header("Content-Length", str(50 * 1024 * 1024))
            h.end_headers()
        elif path == "/streamed-huge":
            h.send_response(200)
            h.send_header("Content-Type", "text/plain")
            h.end_headers()
            chunk = b"x" * 65536
            with contextlib.suppress(OSError):
                for _ in range(11 * 16 + 1):  # just over 11 MiB
                    h.wfile.write(chunk)
        elif path == "/slow":
            time.sleep(2)
            self.send(h, 200, "text/plain", b"late")
        else:
            self.send(h, 404, "text/plain", b"no such page")

    @staticmethod
    def send(h: BaseHTTPRequestHandler, status: int, content_type: str, body: bytes) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(body)

    @staticmethod
    def redirect(h: BaseHTTPRequestHandler, status: int, location: str) -> None:
        h.send_response(status)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()


@contextlib.contextmanager
def web_server() -> Iterator[WebServer]:
    server = WebServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        server.thread.join(timeout=5)
