"""Moved to :mod:`django_workflows.reading.waiting`; this name goes in 0.3 (docs/upgrading.md)."""

from .deprecation import moved
from .reading.waiting import *  # noqa: F403

moved(__name__, "django_workflows.reading.waiting")
