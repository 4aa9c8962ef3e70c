"""``python -m stdio_executor``: the same as the ``stdio-executor`` command."""

import sys

from .cli import main

sys.exit(main())
