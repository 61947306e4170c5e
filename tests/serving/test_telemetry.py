"""Structured logs and origin metrics (serving/http/telemetry.py)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from serving.http import telemetry
from tests.serving.helpers import EDITION, make_app

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_trace_context_from_either_header_and_nothing_from_garbage():
    assert telemetry.trace_from_headers({"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}) == (
        TRACE_ID,
        "00f067aa0ba902b7",
    )
    assert telemetry.trace_from_headers({"X-Cloud-Trace-Context": f"{TRACE_ID.upper()}/123;o=1"}) == (TRACE_ID, "123")
    for bad in ({"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"}, {"traceparent": "x" * 5000}, {}):
        assert telemetry.trace_from_headers(bad) is None


def test_json_lines_carry_severity_and_the_requests_trace(stores, profiles, monkeypatch):
    monkeypatch.setenv("NEWSROOM_LOG_FORMAT", "json")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(telemetry.JsonFormatter(project="newsroom-prod"))
    logger = logging.getLogger("serving.test_telemetry")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    app = make_app(stores, profiles)

    @app.get("/_log")
    def _log():
        logger.warning("inside a request")
        return "ok"

    try:
        app.test_client().get("/_log", headers={"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"})
        logger.error("outside", exc_info=ValueError("boom"))
    finally:
        logger.removeHandler(handler)
        app.extensions["newsroom"].close()
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{"))
    assert inside["severity"] == "WARNING" and inside["message"] == "inside a request"
    assert inside["logging.googleapis.com/trace"] == f"projects/newsroom-prod/traces/{TRACE_ID}"
    assert inside["logging.googleapis.com/spanId"] == "00f067aa0ba902b7"
    assert outside["severity"] == "ERROR" and "logging.googleapis.com/trace" not in outside
    assert "ValueError: boom" in outside["message"]


def test_log_format_defaults_to_json_on_cloud_run_and_refuses_nonsense():
    assert telemetry.log_format({}) == "text"
    assert telemetry.log_format({"K_SERVICE": "newsroom-origin"}) == "json"
    assert telemetry.log_format({"NEWSROOM_LOG_FORMAT": "text", "K_SERVICE": "x"}) == "text"
    with pytest.raises(ValueError, match="json or text"):
        telemetry.log_format({"NEWSROOM_LOG_FORMAT": "xml"})


def test_origin_metrics_report_catalog_pages_rejections_shedding_and_latency(world, profiles):

    app = make_app(world, profiles, NEWSROOM_METRICS_EXPORTER="memory")
    ext = app.extensions["newsroom"]
    try:
        client = app.test_client()
        assert client.get(f"/v1/stories/{'9' * 19}").status_code == 404
        assert client.get("/readyz").status_code == 200
        ext.holder.rejected += 2  # as the watcher counts a refused snapshot
        ext.shedder.shed += 1
        points = ext.metrics.snapshot()
        assert points["newsroom.origin.pages_loaded"][0].value == len(ext.holder.current.pages) > 0
        assert 0 <= points["newsroom.origin.catalog_age"][0].value < 60
        assert points["newsroom.origin.snapshots_rejected"][0].value == 2
        assert points["newsroom.origin.requests_shed"][0].value == 1
        routes = {
            (p.attributes["route"], p.attributes["status_class"]): p.count
            for p in points["newsroom.origin.request_latency"]
        }
        assert routes[("health.readyz", "2xx")] == 1 and any(k[1] == "4xx" for k in routes)
    finally:
        ext.close()


def test_the_watcher_counts_a_refused_snapshot(world, profiles):
    from devtools import samples

    app = make_app(world, profiles)
    ext = app.extensions["newsroom"]
    try:
        bad = samples.edition_page(EDITION, "top", 2, n_stories=5)
        del bad["stories"]  # fails the page schema the origin checks
        samples.publish(world.pointers, world.snapshots, bad, validate=False)
        ext.watcher.poll_once()
        assert ext.holder.rejected == 1
    finally:
        ext.close()


def test_an_unknown_exporter_is_refused(world, profiles):
    with pytest.raises(ValueError, match="NEWSROOM_METRICS_EXPORTER"):
        make_app(world, profiles, NEWSROOM_METRICS_EXPORTER="statsd")


def test_the_gcp_exporter_is_the_one_opentelemetry_ships():
    from opentelemetry.exporter.cloud_monitoring import CloudMonitoringMetricsExporter

    assert CloudMonitoringMetricsExporter.__module__.startswith("opentelemetry.exporter.cloud_monitoring")


def test_terraform_watches_metrics_the_origin_exports_and_turns_them_on(world, profiles, repo_root):
    """The stand-in (memory exporter) and the real configuration agree: every origin metric the monitoring module
    alerts on or charts is one this code exports, and the stack gives the origin the gcp exporter and JSON logs."""
    import re

    monitoring = repo_root / "terraform" / "modules" / "monitoring"
    text = (monitoring / "main.tf").read_text() + (monitoring / "dashboard.json.tftpl").read_text()
    watched = set(re.findall(r"workload\.googleapis\.com/(newsroom\.origin\.[a-z_]+)", text))
    assert "newsroom.origin.catalog_age" in watched
    app = make_app(world, profiles, NEWSROOM_METRICS_EXPORTER="memory")
    try:
        app.test_client().get("/healthz")
        exported = set(app.extensions["newsroom"].metrics.snapshot())
    finally:
        app.extensions["newsroom"].close()
    assert watched <= exported
    stack = (repo_root / "terraform" / "modules" / "stack" / "main.tf").read_text()
    assert re.search(r'NEWSROOM_METRICS_EXPORTER\s*=\s*"gcp"', stack)
    assert re.search(r'NEWSROOM_LOG_FORMAT\s*=\s*"json"', stack)
