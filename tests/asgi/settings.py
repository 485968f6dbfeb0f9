"""The test settings, serving ``tests/asgi/urls.py``: what the uvicorn child of
``tests/asgi/test_served.py`` runs (``tests/asgi/app.py``)."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.asgi.urls"
