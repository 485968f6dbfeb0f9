"""Moved to :mod:`django_workflows.api.signal_sending`;
this name goes in 0.3 (docs/upgrading.md)."""

from ..deprecation import moved
from .signal_sending import *  # noqa: F403

moved(__name__, "django_workflows.api.signal_sending")
