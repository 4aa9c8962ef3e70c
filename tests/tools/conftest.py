from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from files_harness import Harness


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    try:
        yield h
    finally:
        h.close()
