"""Django settings for ``bench/load.py``: the example site, tuned for a load test with faults.

Everything comes from the example project (``example_project/settings.py``:
PostgreSQL from ``DWF_DEMO_DATABASE_URL``, the broker from ``DWF_DEMO_BROKER``);
this module only changes what a load test needs:

* no DEBUG (no query log, no debug pages);
* short heartbeats and sweeps, so a killed worker's attempt is found within
  seconds (``DWF_LOAD_HEARTBEAT_TIMEOUT``), and attempts lost with a restarted
  broker are handed out again soon (``DWF_LOAD_REDISPATCH_AFTER``);
* a queue of its own (``DWF_LOAD_QUEUE``) and ``DWF_LOAD_WORKERS`` workers;
  no django-q2 scheduler: the harness runs ``workflows_sweep --loop`` itself.
"""

from __future__ import annotations

import os

from example_project.settings import *  # noqa: F403
from example_project.settings import HAS_DJANGO_Q, MIDDLEWARE

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
# The example's home page and wizard are not load-tested; keep the middleware as it is.
MIDDLEWARE = list(MIDDLEWARE)

DJANGO_WORKFLOWS = {
    "HEARTBEAT_INTERVAL": float(os.environ.get("DWF_LOAD_HEARTBEAT_INTERVAL", "0.5")),
    "HEARTBEAT_TIMEOUT": float(os.environ.get("DWF_LOAD_HEARTBEAT_TIMEOUT", "6")),
    "SWEEP_INTERVAL": float(os.environ.get("DWF_LOAD_SWEEP_INTERVAL", "0.5")),
    "REDISPATCH_AFTER": float(os.environ.get("DWF_LOAD_REDISPATCH_AFTER", "10")),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(process)d %(name)s %(levelname)s "
                                       "%(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "django_workflows": {"handlers": ["console"], "level": "WARNING"},
        "django.request": {"handlers": ["console"], "level": "ERROR"},
    },
}

if HAS_DJANGO_Q:
    from example_project.settings import Q_CLUSTER

    Q_CLUSTER = {
        **Q_CLUSTER,
        "name": os.environ.get("DWF_LOAD_QUEUE", "dwf-load"),
        "workers": int(os.environ.get("DWF_LOAD_WORKERS", "4")),
        "poll": 0.05,
        "scheduler": False,
        "ack_failures": True,
        "timeout": 60,
        "retry": 120,
        "max_attempts": 1,
    }
