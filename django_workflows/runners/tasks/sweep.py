"""Moved to :mod:`django_workflows.runners.tasks.sweep_chain`;
this name goes in 0.3 (docs/upgrading.md)."""

# A sweep Task queued by an older version is stored under this module's name.
from ...deprecation import moved
from .sweep_chain import *  # noqa: F403

moved(__name__, "django_workflows.runners.tasks.sweep_chain")
