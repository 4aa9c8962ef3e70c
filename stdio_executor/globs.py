"""The one glob language, shared by file permission rules and the Glob tool.

Owns: translating a ``/``-separated glob pattern into a regex over relative, normalized paths,
so that a rule such as ``Read(src/**/*.py)`` and a Glob call with the same pattern can never
disagree on which paths it names. The decisions, once (gitignore's, which Claude Code's file
rules follow, and node-glob's, which its Glob follows, agree on all of them):

- ``*`` and ``?`` match within one segment, never a ``/``;
- ``**`` as a whole segment matches zero or more whole segments (``a/**/b``: ``a/b``,
  ``a/x/b``, ``a/x/y/b``); as the last segment, everything below; inside a segment
  (``a**b``) it is a plain ``*``;
- ``[abc]``, ``[a-z]``, ``[!abc]`` / ``[^abc]``: one character of a class, which never
  matches ``/``, negated or not; an unclosed ``[`` is literal;
- ``\\`` escapes the next character.

Braces (``{a,b}``) are the Glob tool's alone (``expand_braces``): gitignore has none, so a
permission rule keeps them literal, as Claude Code's do.
Must not: touch the file system or know who matches what (``tools/files/globbing`` walks,
``permissions/rules`` decides); import anything beyond the standard library.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["MAX_ALTERNATIVES", "expand_braces", "path_regex", "segment_regex"]

MAX_ALTERNATIVES = 256


def path_regex(pattern: str) -> str:
    """A regex (source) that fully matches the relative paths ``pattern`` names."""
    segments = pattern.split("/")
    out: list[str] = []
    for n, segment in enumerate(segments):
        last = n == len(segments) - 1
        if segment == "**":
            # Any number of whole segments, none included; at the end, anything below.
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(segment_regex(segment) + ("" if last else "/"))
    return "".join(out)


def segment_regex(segment: str) -> str:
    """A regex (source) for one segment: wildcards never cross a ``/``."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        elif c == "[":
            end = segment.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = segment[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                # A class never matches the separator, negated or not.
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c{d,e}}`` -> ``ab``, ``acd``, ``ace``; an unbalanced or comma-less brace is
    literal. More than ``MAX_ALTERNATIVES`` results raise ``re.error``."""
    results: list[str] = []
    pending = [pattern]
    while pending:
        current = pending.pop()
        found = _first_group(current)
        if found is None:
            results.append(current)
        else:
            start, end, options = found
            for option in reversed(options):
                pending.append(current[:start] + option + current[end + 1 :])
        if len(results) + len(pending) > MAX_ALTERNATIVES:
            raise re.error(f"more than {MAX_ALTERNATIVES} alternatives")
    return results


def _first_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first ``{...}`` holding a top-level comma: (start, end, options)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "{":
            depth, j, cuts = 0, i, []
            while j < len(pattern):
                c = pattern[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == "," and depth == 1:
                    cuts.append(j)
                j += 1
            if j < len(pattern) and cuts:
                bounds = [i, *cuts, j]
                options = [pattern[a + 1 : b] for a, b in itertools.pairwise(bounds)]
                return i, j, options
        i += 1
    return None
