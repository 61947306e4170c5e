"""Observability of the origin (and the jobs' launchers): structured JSON logs and OpenTelemetry metrics.

Logs (:func:`configure_logging`): ``NEWSROOM_LOG_FORMAT=json|text``; default ``json`` where Cloud Run runs us
(``K_SERVICE`` set), ``text`` elsewhere. A JSON line is what Cloud Logging's agent parses from stdout/stderr:
``severity``, ``message``, ``logger``, ``time``, and, inside a request that carried a trace (``traceparent`` or
``X-Cloud-Trace-Context``), ``logging.googleapis.com/trace`` (``projects/<project>/traces/<id>`` when the project is
known) and ``logging.googleapis.com/spanId``, so every line of a request groups under its trace in the console.
Exceptions go in ``message`` with their traceback (Error Reporting reads them from there).

Metrics (:class:`OriginMetrics`), OpenTelemetry instruments, exported every ``NEWSROOM_METRICS_INTERVAL_S``
(60 s) by ``NEWSROOM_METRICS_EXPORTER``: ``none`` (default off Cloud Run), ``gcp`` (Cloud Monitoring through
opentelemetry-exporter-gcp-monitoring: metric types ``workload.googleapis.com/newsroom.origin.*``; default on
Cloud Run) or ``memory`` (tests read them back):

- ``newsroom.origin.catalog_age`` (s, gauge): since the stores last answered a poll (-1 before the first);
- ``newsroom.origin.pages_loaded`` (gauge): edition pages held in memory;
- ``newsroom.origin.snapshots_rejected`` (counter): snapshots the watcher refused (schema, identity, bad JSON);
- ``newsroom.origin.requests_shed`` (counter): For you requests answered 503 by the shedder;
- ``newsroom.origin.request_latency`` (ms, histogram; ``route`` = the Flask endpoint, ``status_class``): time
  inside Flask. The WSGI fast path (serving/worker/fastpath.py) answers section pages in microseconds outside Flask and is
  not timed here; Cloud Run's own request_latencies covers everything end to end.

Each worker process exports its own series (the exporter labels them with the instance and process), which is
what Cloud Monitoring aggregates.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import time
from datetime import UTC, datetime

LOG_FORMAT_ENV = "NEWSROOM_LOG_FORMAT"
TRACE = contextvars.ContextVar("newsroom_trace", default=None)
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_CLOUD_TRACE = re.compile(r"^([0-9a-fA-F]{32})(?:/([0-9]{1,20}))?")
_SEVERITY = {"WARNING": "WARNING", "CRITICAL": "CRITICAL", "ERROR": "ERROR", "INFO": "INFO", "DEBUG": "DEBUG"}


def trace_from_headers(headers) -> tuple[str, str | None] | None:
    """(trace id, span id) from a W3C ``traceparent`` or Google's ``X-Cloud-Trace-Context``; None if neither
    parses. Bounded: anything malformed is ignored, never logged as given."""
    tp = (headers.get("traceparent") or "").strip().lower()
    m = _TRACEPARENT.match(tp)
    if m and m.group(1) != "0" * 32:
        return m.group(1), m.group(2)
    m = _CLOUD_TRACE.match((headers.get("X-Cloud-Trace-Context") or "").strip())
    if m:
        return m.group(1).lower(), m.group(2)
    return None


class JsonFormatter(logging.Formatter):
    """One JSON object per record, with the fields Cloud Logging lifts into the entry."""

    def __init__(self, project: str | None = None):
        super().__init__()
        self.project = project

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message = f"{message}\n{self.formatException(record.exc_info)}"
        entry = {
            "severity": _SEVERITY.get(record.levelname, "DEFAULT"),
            "message": message,
            "logger": record.name,
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
        }
        trace = TRACE.get()
        if trace is not None:
            trace_id, span = trace
            entry["logging.googleapis.com/trace"] = (
                f"projects/{self.project}/traces/{trace_id}" if self.project else trace_id
            )
            if span:
                entry["logging.googleapis.com/spanId"] = span
        return json.dumps(entry, ensure_ascii=False)


def log_format(environ=None) -> str:
    environ = os.environ if environ is None else environ
    fmt = (environ.get(LOG_FORMAT_ENV) or ("json" if environ.get("K_SERVICE") else "text")).strip().lower()
    if fmt not in ("json", "text"):
        raise ValueError(f"{LOG_FORMAT_ENV} must be json or text, not {fmt!r}")
    return fmt


def configure_logging(environ=None, level: int = logging.INFO) -> str:
    """Root logging (and gunicorn's loggers) in the chosen format; returns it. Idempotent."""
    environ = os.environ if environ is None else environ
    fmt = log_format(environ)
    if fmt == "json":
        project = environ.get("GOOGLE_CLOUD_PROJECT") or environ.get("NEWSROOM_PROJECT") or None
        formatter: logging.Formatter = JsonFormatter(project)
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    if not any(getattr(h, "_newsroom", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler._newsroom = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level)
    for logger in (root, logging.getLogger("gunicorn.error"), logging.getLogger("gunicorn.access")):
        for handler in logger.handlers:
            handler.setFormatter(formatter)
    return fmt


class OriginMetrics:
    """The origin's OpenTelemetry instruments over one app's catalogue holder, shedder and watcher."""

    EXPORTERS = ("none", "gcp", "memory")

    def __init__(self, ext, exporter: str = "none", interval_s: float = 60.0):
        if exporter not in self.EXPORTERS:
            raise ValueError(f"NEWSROOM_METRICS_EXPORTER must be one of {self.EXPORTERS}, not {exporter!r}")
        self.exporter = exporter
        self.reader = None
        self.provider = None
        self._latency = None
        if exporter == "none":
            return
        from opentelemetry.metrics import CallbackOptions, Observation
        from opentelemetry.sdk.metrics import MeterProvider

        self.reader = self._reader(exporter, interval_s)
        self.provider = MeterProvider(metric_readers=[self.reader])
        meter = self.provider.get_meter("newsroom.origin")
        holder = ext.holder

        def catalog_age(_: CallbackOptions):
            last = holder.last_success
            yield Observation(-1.0 if last is None else max(0.0, time.monotonic() - last))

        meter.create_observable_gauge("newsroom.origin.catalog_age", [catalog_age], unit="s")
        meter.create_observable_gauge(
            "newsroom.origin.pages_loaded", [lambda _: [Observation(len(holder.current.pages))]]
        )
        meter.create_observable_counter(
            "newsroom.origin.snapshots_rejected", [lambda _: [Observation(holder.rejected)]]
        )
        meter.create_observable_counter("newsroom.origin.requests_shed", [lambda _: [Observation(ext.shedder.shed)]])
        self._latency = meter.create_histogram("newsroom.origin.request_latency", unit="ms")

    @staticmethod
    def _reader(exporter: str, interval_s: float):
        if exporter == "memory":
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader

            return InMemoryMetricReader()
        from opentelemetry.exporter.cloud_monitoring import CloudMonitoringMetricsExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        return PeriodicExportingMetricReader(
            CloudMonitoringMetricsExporter(add_unique_identifier=True), export_interval_millis=interval_s * 1000
        )

    def record_request(self, endpoint: str | None, status: int, seconds: float) -> None:
        if self._latency is not None:
            attrs = {"route": endpoint or "unmatched", "status_class": f"{status // 100}xx"}
            self._latency.record(seconds * 1000.0, attrs)

    def snapshot(self) -> dict[str, list]:
        """memory exporter only: metric name -> its data points (tests)."""
        data = self.reader.get_metrics_data()
        out: dict[str, list] = {}
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out[metric.name] = list(metric.data.data_points)
        return out

    def shutdown(self) -> None:
        if self.provider is not None:
            self.provider.shutdown()
            self.provider = None


def init_app(app, ext) -> OriginMetrics:
    """Trace context and request timing hooks on ``app``; the metrics as NEWSROOM_METRICS_EXPORTER says."""
    from flask import g, request

    cfg = app.config
    exporter = cfg["NEWSROOM_METRICS_EXPORTER"] or ("gcp" if os.environ.get("K_SERVICE") else "none")
    metrics = OriginMetrics(ext, exporter=str(exporter), interval_s=float(cfg["NEWSROOM_METRICS_INTERVAL_S"]))
    if metrics.exporter == "none" and log_format() != "json":
        return metrics  # nothing would read the trace or the timing: no per-request hooks (~40 us a request)

    @app.before_request
    def _start():
        g.newsroom_t0 = time.perf_counter()
        g.newsroom_trace = TRACE.set(trace_from_headers(request.headers))

    @app.after_request
    def _timed(resp):
        t0 = g.pop("newsroom_t0", None)
        if t0 is not None:
            metrics.record_request(request.endpoint, resp.status_code, time.perf_counter() - t0)
        return resp

    @app.teardown_request
    def _end(_exc):
        token = g.pop("newsroom_trace", None)
        if token is not None:
            TRACE.reset(token)

    return metrics
