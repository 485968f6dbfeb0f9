"""Django settings for the qclusters of ``bench/schedules.py``: ``bench/settings_operations.py``
and the app that declares the schedules measured."""

from __future__ import annotations

from bench.settings_operations import *  # noqa: F403
from bench.settings_operations import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.schedulesapp"]
