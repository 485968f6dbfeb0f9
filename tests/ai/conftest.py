from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_workflows import registry
from tests.ai.assistant import WORKFLOW


@pytest.fixture(autouse=True)
def assistant_unregistered() -> Iterator[None]:
    yield
    registry.unregister(WORKFLOW)
