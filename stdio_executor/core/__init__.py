"""The sans-I/O executor core (SPEC section 4). See ``executor`` for the theory of operation."""

from . import executor
from .executor import *  # noqa: F403

__all__ = executor.__all__
