"""``stdio-executor completion bash|zsh``: shell completion scripts.

Owns: turning the command line's argparse parser into a bash or zsh completion script, and
telling the generator which arguments name files and which name directories.
Must not: be imported by the daemon (shtab is imported here, for this subcommand only).

The script is generated from the same parser that parses the command line, so a new option
or subcommand completes without anyone remembering to edit a script. shtab writes static
scripts (no Python runs at each TAB), which is why it is used rather than argcomplete.
"""

from __future__ import annotations

import argparse

__all__ = ["completion_script"]

# Arguments are classified by their metavar, which the parsers already use consistently.
_FILES = {"FILE", "PATH", "JOURNAL"}
_DIRS = {"DIR"}


def _mark_paths(parser: argparse.ArgumentParser, files: object, dirs: object) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _mark_paths(child, files, dirs)
        elif action.metavar in _FILES:
            action.complete = files  # type: ignore[attr-defined]  # shtab reads this attribute
        elif action.metavar in _DIRS:
            action.complete = dirs  # type: ignore[attr-defined]


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` ("bash" or "zsh")."""
    import shtab

    _mark_paths(parser, shtab.FILE, shtab.DIRECTORY)
    script: str = shtab.complete(parser, shell=shell)
    return script
