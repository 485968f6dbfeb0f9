"""Serve the metrics on a port of their own, for a machine that runs workers and no web
server (docs/observability.md); the metrics extra."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections, connections


class Command(BaseCommand):
    help = ("Serve what the /metrics view shows (this machine's processes, through "
            "PROMETHEUS_MULTIPROC_DIR, and the gauges read from the tables) on a port of its "
            "own, without authentication: bind it where only Prometheus reaches it.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--port", type=int, default=9464)
        parser.add_argument("--address", default="127.0.0.1",
                            help="The address to listen on (0.0.0.0: every interface).")
        parser.add_argument("--for", dest="duration", type=float, default=None,
                            help="Stop after this many seconds (default: until stopped).")

    def handle(self, *args: Any, port: int, address: str, duration: float | None,
               **options: Any) -> None:
        try:
            from prometheus_client import CollectorRegistry, start_http_server

            from ...observability.views import Scrape
        except ImportError as error:
            raise CommandError('The metrics extra is not installed: pip install '
                               '"django-durable-workflows[metrics]"') from error

        class OwnConnection(Scrape):
            """Each scrape is answered in a thread of its own: its connection closes with it."""

            def collect(self) -> Any:
                try:
                    yield from super().collect()
                finally:
                    connections.close_all()

        registry = CollectorRegistry(auto_describe=False)
        registry.register(OwnConnection())
        server, thread = start_http_server(port, addr=address, registry=registry)
        if options["verbosity"] >= 1:
            self.stdout.write(f"Serving the metrics at http://{address}:{port}/metrics")
        end = time.monotonic() + duration if duration is not None else None
        try:
            while end is None or time.monotonic() < end:
                time.sleep(min(1.0, end - time.monotonic()) if end is not None else 60.0)
                close_old_connections()
        except KeyboardInterrupt:
            pass
        finally:
            server.shutdown()
            thread.join(5)
