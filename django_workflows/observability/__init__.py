"""Metrics and traces in the tools operations teams already run (docs/observability.md).

- ``observers.py``: what the services tell observers, and the tuple of those in use
  (empty unless ``METRICS`` or ``TRACING`` is on: the services then pay one branch);
- ``metrics.py``: Prometheus counters and histograms (the ``metrics`` extra), fed by
  :class:`~.metrics.MetricsObserver`; ``gauges.py``: what a scrape reads from the
  tables; ``views.py``: the ``/metrics`` view;
- ``tracing.py``: OpenTelemetry spans (the ``otel`` extra), the attempt's trace context
  stored on its row so a worker's span joins the command's trace.

Nothing here imports prometheus-client or OpenTelemetry until its setting is on.
"""
