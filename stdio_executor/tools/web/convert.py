"""How WebFetch turns a response body into text for the model.

Owns: the content types it understands (HTML and XHTML become Markdown; other text, JSON,
XML and JavaScript are passed as they are; anything else is binary), the character set a
body is decoded with, and the HTML-to-Markdown conversion: scripts, styles and other
invisible elements are removed, then ``markdownify`` writes ATX headings and fenced code.
Must not: touch the network or the file system. It is CPU work: callers run it in a worker
thread, and the libraries (bs4, markdownify: ~0.2 s to import) load on the first page.
"""

from __future__ import annotations

import codecs

import msgspec

__all__ = ["Converted", "convert", "media_type"]

_HTML = frozenset({"text/html", "application/xhtml+xml"})
_TEXT = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-sh",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
    }
)
# Elements whose text a reader never sees.
_INVISIBLE = ("script", "style", "noscript", "template", "head", "svg", "iframe")


class Converted(msgspec.Struct, frozen=True):
    text: str | None  # None: a binary body
    kind: str  # "html", "text" or "binary"


def media_type(content_type: str) -> tuple[str, str | None]:
    """``text/html; charset=Latin-1`` -> ("text/html", "latin-1")."""
    mime, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return mime.strip().lower(), charset


def convert(body: bytes, content_type: str) -> Converted:
    mime, charset = media_type(content_type)
    if mime in _HTML or (not mime and body.lstrip()[:15].lower().startswith(b"<!doctype html")):
        return Converted(html_to_markdown(_decode(body, charset)), "html")
    if (
        mime.startswith("text/")
        or mime in _TEXT
        or mime.endswith(("+json", "+xml"))
        or (not mime and _looks_textual(body))
    ):
        return Converted(_decode(body, charset), "text")
    return Converted(None, "binary")


def html_to_markdown(html: str) -> str:
    from bs4 import BeautifulSoup
    from markdownify import ATX, MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for element in soup(list(_INVISIBLE)):
        element.decompose()
    text: str = MarkdownConverter(heading_style=ATX, bullets="-").convert_soup(soup)
    # markdownify keeps the blank lines of the page's layout; more than one in a row is noise.
    lines: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines).strip()


def _decode(body: bytes, charset: str | None) -> str:
    if charset:
        try:
            codecs.lookup(charset)
        except LookupError:
            charset = None
    return body.decode(charset or "utf-8", "replace")


def _looks_textual(body: bytes) -> bool:
    head = body[:8192]
    if b"\0" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True
