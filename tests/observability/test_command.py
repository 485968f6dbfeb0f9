"""``manage.py workflows_metrics``: the metrics on a port of their own, for a machine that
runs workers and no web server."""

from __future__ import annotations

import socket
import threading
import urllib.request
from typing import Any

import pytest
from django.core.management import call_command

pytest.importorskip("prometheus_client")

from django_workflows import services
from tests.observability.scrape import parse, value
from tests.qcluster import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("metrics_on")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode()
    except OSError:
        return None


def test_the_command_serves_the_metrics_and_gauges_on_its_port(settings: Any) -> None:
    services.create("obs-order", start=True)
    port = free_port()
    server = threading.Thread(target=call_command, args=(
        "workflows_metrics", "--port", str(port), "--for", "5", "--verbosity", "0"))
    server.start()
    try:
        text = wait_for(lambda: fetch(f"http://127.0.0.1:{port}/metrics"), timeout=5,
                        message="the metrics server")
    finally:
        server.join(10)
    samples = parse(text)
    assert value(samples, "django_workflows_instances", workflow="obs-order",
                 status="running") == 1
    assert value(samples, "django_workflows_attempts_total", workflow="obs-order",
                 operation="charge", outcome="succeeded") >= 1
    assert all(name.startswith("django_workflows_") for name, _ in samples)
