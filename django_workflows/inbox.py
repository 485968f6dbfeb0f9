"""Moved to :mod:`django_workflows.reading.inbox`; this name goes in 0.3 (docs/upgrading.md)."""

from .deprecation import moved
from .reading.inbox import *  # noqa: F403

moved(__name__, "django_workflows.reading.inbox")
