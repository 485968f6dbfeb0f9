"""Moved to :mod:`django_workflows.inputs.json_text`; this name goes in 0.3 (docs/upgrading.md)."""

from .deprecation import moved
from .inputs.json_text import *  # noqa: F403

moved(__name__, "django_workflows.inputs.json_text")
