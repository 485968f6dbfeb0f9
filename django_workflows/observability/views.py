"""The ``/metrics`` view: our counters and histograms, every worker's added up, and the
gauges read from the tables, in Prometheus's text format (or OpenMetrics, as asked).

Mount it where Prometheus looks::

    from django_workflows.observability.views import metrics_view

    urlpatterns = [..., path("metrics", metrics_view)]

It answers a scraper that sends ``Authorization: Bearer <METRICS_TOKEN>``, or a signed-in
user with the permission to view workflow instances; 401 or 403 otherwise. It shows
only our ``django_workflows_*`` families, so it stands beside django-prometheus's own
view (and its metrics) without showing anything twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import multiprocess
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..conf import workflow_settings
from .gauges import table_gauges
from .metrics import PREFIX, REGISTRY

VIEW_PERMISSION = "django_workflows.view_workflowinstance"


def multiprocess_directory() -> str | None:
    """prometheus-client's multiprocess directory, when the environment names one."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class Scrape(Collector):
    """What one scrape shows: our counters and histograms (every process's, in
    multiprocess mode), then the gauges read from the tables."""

    def collect(self) -> Iterator[Metric]:
        directory = multiprocess_directory()
        if directory:
            # Every process's files, django-prometheus's too if it shares the directory:
            # ours only.
            merged = multiprocess.MultiProcessCollector(None, path=directory)
            yield from (family for family in merged.collect()
                        if family.name.startswith(f"{PREFIX}_"))
        else:
            yield from REGISTRY.collect()
        yield from table_gauges.collect()


def allowed(request: HttpRequest) -> bool | None:
    """True: may read; False: refused; None: no credentials given."""
    token = workflow_settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if token and scheme.lower() == "bearer":
        return constant_time_compare(given.strip(), token)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return False if header else None
    return bool(user.has_perm(VIEW_PERMISSION))


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    verdict = allowed(request)
    if verdict is None:
        response = HttpResponse("Authentication credentials were not provided.\n",
                                status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not verdict:
        return HttpResponse("Not allowed to read the metrics.\n", status=403,
                            content_type="text/plain")
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(Scrape()), content_type=content_type)
