"""The WebFetch tool: one HTTP GET, its body as Markdown, the model's prompt restated.

Owns: the URL rules (Claude Code's: at most 2,000 characters, http or https, no user name
or password, a host with a dot in it; ``http://`` is upgraded to ``https://`` except for a
loopback address, where TLS is rare and a local server is the point), the permission
content ``domain:HOST`` that ``WebFetch(domain:...)`` rules match exactly, the exchange
itself (redirects followed only within the same scheme, host and port, ``www.`` aside, at
most ten; a redirect elsewhere is reported in Claude Code's words and not followed, so the
model asks again and permission judges the new host), the limits (``MAX_BYTES`` of body,
``TIMEOUT_S`` for the whole exchange) and the result text.
Must not: summarise: Claude Code runs a small model over the page with the prompt; the
daemon has none, so it returns the content with the prompt stated above it (a host that has
a model can take WebFetch over). It must not import the HTTP client or the HTML libraries at
start-up either: they load in a worker thread on the first call (~0.2 s each).

Large content goes through ``results.finish``: past the tool's size limit the whole text is
saved in the spill directory and the result is a preview. A binary body (an image, a PDF) is
saved there as it came and the result names the file.
"""

from __future__ import annotations

import ipaddress
import mimetypes
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import anyio
import anyio.to_thread
import msgspec

from ..base import InputError, Tool, ToolContext, ToolOutcome
from ..files.results import finish, tool_error
from ..inputs import WebFetchInput, parse

if TYPE_CHECKING:
    import httpx2

__all__ = ["MAX_BYTES", "MAX_REDIRECTS", "TIMEOUT_S", "WebFetchTool"]

MAX_URL_CHARS = 2000
MAX_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 10
TIMEOUT_S = 60.0
_CONNECT_TIMEOUT_S = 15.0
_USER_AGENT = "stdio-executor-WebFetch/1 (+https://pypi.org/project/stdio-executor/)"
_ACCEPT = "text/markdown, text/html, */*"
_REDIRECTS = {301: "Moved Permanently", 302: "Found", 303: "See Other", 307: "Temporary "
              "Redirect", 308: "Permanent Redirect"}  # fmt: skip


class _FetchCall(msgspec.Struct, frozen=True):
    url: str  # as the model sent it
    fetch_url: str  # what is fetched (http upgraded)
    host: str
    prompt: str


class WebFetchTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> _FetchCall:
        value = parse(self.spec.name, WebFetchInput, raw)
        problem, parts = _check_url(value.url)
        if problem is not None or parts is None:
            raise InputError(
                f'<tool_use_error>Error: Invalid URL "{value.url}". The URL provided could not '
                f"be parsed{': ' + problem if problem else ''}.</tool_use_error>"
            )
        scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
        if scheme == "http" and not _is_loopback(host):
            parts = parts._replace(scheme="https")
        return _FetchCall(value.url, urlunsplit(parts), host, value.prompt)

    def describe(self, value: Any) -> str:
        call: _FetchCall = value
        return call.url

    def rule_content(self, value: Any) -> str | None:
        call: _FetchCall = value
        return f"domain:{call.host}"

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _FetchCall = value
        httpx = await _http_client_module()
        with anyio.move_on_after(TIMEOUT_S):
            return await _fetch(httpx, call, ctx, self)
        return ToolOutcome(
            f"<tool_use_error>Fetching {call.fetch_url} took longer than {TIMEOUT_S:.0f} s and "
            "was stopped.</tool_use_error>",
            is_error=True,
            status="timed_out",
        )


def _check_url(url: str) -> tuple[str | None, Any]:
    if len(url) > MAX_URL_CHARS:
        return f"it is longer than {MAX_URL_CHARS} characters", None
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises for a port that is not a number
    except ValueError as exc:
        return str(exc), None
    del port
    if parts.scheme.lower() not in ("http", "https"):
        return "only http and https URLs can be fetched", None
    if parts.username is not None or parts.password is not None:
        return "a URL must not carry a user name or password", None
    host = parts.hostname or ""
    if "." not in host.strip(".") and not _is_ip(host):
        return "the host must be a full domain name (such as example.com)", None
    return None, parts


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_httpx: Any = None


async def _http_client_module() -> Any:
    """``httpx2``, imported in a worker thread the first time (not on the event loop)."""
    global _httpx
    if _httpx is None:

        def load() -> Any:
            import httpx2

            return httpx2

        _httpx = await anyio.to_thread.run_sync(load)
    return _httpx


def _same_site(a: str, b: str) -> bool:
    """Claude Code's permitted redirect: same scheme and port, same host up to ``www.``,
    no credentials."""
    pa, pb = urlsplit(a), urlsplit(b)
    if pa.scheme != pb.scheme or pa.port != pb.port or pb.username or pb.password:
        return False
    return (pa.hostname or "").removeprefix("www.") == (pb.hostname or "").removeprefix("www.")


async def _fetch(httpx: Any, call: _FetchCall, ctx: ToolContext, tool: Tool) -> ToolOutcome:
    timeout = httpx.Timeout(TIMEOUT_S, connect=_CONNECT_TIMEOUT_S)
    headers = {"Accept": _ACCEPT, "User-Agent": _USER_AGENT}
    url = call.fetch_url
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=timeout, headers=headers
    ) as client:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                async with client.stream("GET", url) as response:
                    status = response.status_code
                    if status in _REDIRECTS and "location" in response.headers:
                        target = urljoin(url, response.headers["location"])
                        if not _same_site(url, target):
                            return ToolOutcome(_redirect_text(url, target, status, call.prompt))
                        url = target
                        continue
                    if status >= 400:
                        return tool_error(
                            f"Fetching {url} failed: HTTP {status} {response.reason_phrase}."
                        )
                    body = await _read_capped(response)
                    if body is None:
                        return tool_error(
                            f"The content of {url} is larger than {MAX_BYTES // (1024 * 1024)} "
                            "MB, the most WebFetch reads. Fetch a smaller page, or download it "
                            "with Bash if the user agrees."
                        )
                    content_type = response.headers.get("content-type", "")
                    reason = response.reason_phrase
            except httpx.TimeoutException:
                return tool_error(f"Fetching {url} timed out.")
            except httpx.HTTPError as exc:
                return tool_error(f"Fetching {url} failed: {_describe(exc)}")
            return await _render(call, url, status, reason, content_type, body, ctx, tool)
    return tool_error(f"Fetching {call.fetch_url} failed: more than {MAX_REDIRECTS} redirects.")


async def _read_capped(response: httpx2.Response) -> bytes | None:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BYTES:
        return None
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_BYTES:
            return None
    return bytes(body)


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if text.endswith(".") else text + "."


def _redirect_text(original: str, target: str, status: int, prompt: str) -> str:
    return (
        "REDIRECT DETECTED: The URL redirects to a different host.\n\n"
        f"Original URL: {original}\n"
        f"Redirect URL: {target}\n"
        f"Status: {status} {_REDIRECTS.get(status, 'Found')}\n\n"
        "To complete your request, I need to fetch content from the redirected URL. Please "
        "use WebFetch again with these parameters:\n"
        f'- url: "{target}"\n'
        f'- prompt: "{prompt}"'
    )


async def _render(
    call: _FetchCall,
    url: str,
    status: int,
    reason: str,
    content_type: str,
    body: bytes,
    ctx: ToolContext,
    tool: Tool,
) -> ToolOutcome:
    from .convert import convert, media_type

    converted = await anyio.to_thread.run_sync(convert, body, content_type)
    mime = media_type(content_type)[0] or "unknown type"
    where = f"{url} ({status} {reason}, {mime}, {len(body):,} bytes)"
    if converted.text is None:
        path = ctx.session.spill_path(ctx.tool_use_id, mimetypes.guess_extension(mime) or ".bin")
        try:
            await anyio.to_thread.run_sync(_save, path, body)
        except OSError as exc:
            return tool_error(f"Fetched {where}, a binary file, but could not save it: {exc}")
        return ToolOutcome(
            f"Fetched {where}. It is binary content, not text: it was saved as it came to "
            f"{path} (inspect it with Read or Bash).\n\nPrompt: {call.prompt}"
        )
    how = "converted from HTML to Markdown" if converted.kind == "html" else "as text"
    head = (
        f"Fetched {where}, {how}. No model has read it: answer the prompt below from the "
        f"content yourself.\n\nPrompt: {call.prompt}\n\n---\n"
    )
    content = converted.text or "(the page has no text content)"
    return finish(ToolOutcome(head + content), tool.spec, ctx)


def _save(path: str, body: bytes) -> None:
    from ..output import create_new

    with create_new(path) as f:
        f.write(body)
