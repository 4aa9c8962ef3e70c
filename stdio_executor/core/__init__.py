"""The sans-I/O executor core (SPEC section 4). See ``executor`` for the theory of operation.

Owns: re-exporting the core's public names (``events``: what goes in and out; ``executor``:
the rules). Must not: import anything beyond the standard library.
"""

from . import events, executor
from .events import *  # noqa: F403
from .executor import *  # noqa: F403

__all__ = [*events.__all__, *executor.__all__]
