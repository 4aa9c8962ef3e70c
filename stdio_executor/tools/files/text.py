"""How the file tools tell text from binary and keep a file's encoding and line endings.

Owns: ``TextCodec`` (which encoding a file uses, detected once from its bytes, and the exact
round trip back to bytes), the binary sniff, image recognition by magic bytes, and matching
the model's ``\\n`` against a file that uses ``\\r\\n``.
Must not: touch the file system; callers hand in bytes.

Encodings: a byte-order mark decides (UTF-8, UTF-16 LE/BE, kept on write); without one, UTF-8
if the bytes decode, else Latin-1, which maps every byte to one character and back, so an
Edit of a legacy file changes the edited bytes and nothing else. Read and Edit share this
detection, so the text the model edits is the text it was shown.
"""

from __future__ import annotations

import codecs

import msgspec

__all__ = [
    "BINARY_EXTENSIONS",
    "IMAGE_EXTENSIONS",
    "LATIN_1",
    "SNIFF_BYTES",
    "UTF_8",
    "TextCodec",
    "image_type",
    "looks_binary",
    "match_line_endings",
]

# Enough to recognise a file's kind and encoding without reading all of it.
SNIFF_BYTES = 64 * 1024
_NUL_SNIFF = 8 * 1024

IMAGE_EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

# Formats that are binary even when their first bytes hold no NUL (compressed streams).
BINARY_EXTENSIONS = frozenset(
    {
        ".7z", ".a", ".avi", ".bin", ".bz2", ".class", ".dll", ".dylib", ".exe", ".gz",
        ".ico", ".jar", ".mov", ".mp3", ".mp4", ".o", ".otf", ".pdf", ".pyc", ".so",
        ".sqlite", ".tar", ".ttf", ".wasm", ".woff", ".woff2", ".xz", ".zip", ".zst",
    }
)  # fmt: skip


class TextCodec(msgspec.Struct, frozen=True):
    """A file's encoding: the codec for its body and the byte-order mark before it."""

    name: str
    bom: bytes = b""

    @staticmethod
    def detect(data: bytes, complete: bool) -> TextCodec:
        """The encoding of ``data``, the whole file or (``complete=False``) its first bytes."""
        if data[:1] in _BOM_STARTS:
            for bom, codec in _BOMS:
                if data.startswith(bom):
                    return codec
        try:
            if complete:
                data.decode("utf-8")
            else:  # a prefix may end inside a character
                codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
        except UnicodeDecodeError:
            return LATIN_1
        return UTF_8

    @property
    def label(self) -> str:
        return f"{self.name} with BOM" if self.bom else self.name

    def decode(self, data: bytes) -> str:
        return data[len(self.bom) :].decode(self.name)

    def encode(self, text: str) -> bytes:
        """Raises ``UnicodeEncodeError`` when the text does not fit (Latin-1 only)."""
        return self.bom + text.encode(self.name)


def looks_binary(head: bytes, codec: TextCodec, extension: str) -> bool:
    """Whether a file is binary, from its first bytes and its (lower-case) extension."""
    if extension in BINARY_EXTENSIONS:
        return True
    # UTF-16 text is full of NULs; any other text file has none.
    return not codec.name.startswith("utf-16") and head.find(b"\0", 0, _NUL_SNIFF) >= 0


# The first bytes of the magic numbers below: a file starting otherwise (any text file but
# one starting "G" or "R") is told apart by one set lookup instead of four prefix tests
# (74 against 492 ns; bench/NOTES.md section 18).
_IMAGE_LEADS = frozenset(b"\x89\xffGR")


def image_type(head: bytes) -> str | None:
    """The media type of a png/jpeg/gif/webp image, by its magic bytes."""
    if not head or head[0] not in _IMAGE_LEADS:
        return None
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """``old`` and ``new`` in the line-ending style of ``text`` where that makes ``old`` match.

    Models write ``\\n``; a file with mostly ``\\r\\n`` gets both strings in ``\\r\\n``
    (unless ``old`` only matches as sent, e.g. an LF stretch of a mixed file), so the edit
    neither misses nor leaves a mix of endings behind. The reverse case is handled too.
    """
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    if crlf > lf:
        as_crlf = _to_crlf(old)
        if as_crlf in text:
            return as_crlf, _to_crlf(new)
        return old, new
    if "\r\n" in old and old not in text:
        as_lf = old.replace("\r\n", "\n")
        if as_lf in text:
            return as_lf, new.replace("\r\n", "\n")
    return old, new


def _to_crlf(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\n", "\r\n")


UTF_8 = TextCodec("utf-8")
LATIN_1 = TextCodec("latin-1")
_BOMS = tuple(
    (bom, TextCodec(name, bom))
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    )
)
_BOM_STARTS = frozenset(bom[:1] for bom, _ in _BOMS)
