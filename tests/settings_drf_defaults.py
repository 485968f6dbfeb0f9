"""The test settings with a project's own REST_FRAMEWORK that names authentication classes only.

DRF's defaults for the rest: its own AutoSchema as ``DEFAULT_SCHEMA_CLASS``, its
exception handler, its renderers. For tests that run in a process of their own:
a module keeps what it read of the settings when it was imported.
"""

from __future__ import annotations

from tests.settings import *  # noqa: F403

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
}
