"""The sans-I/O executor core (SPEC section 4). See ``executor`` for the theory of operation."""

from .executor import *  # noqa: F403
from .executor import __all__
