"""Every signal terraform/modules/monitoring watches is fed by the code.

The module's log-based metrics read lines the jobs log (their filters and extractors are regular expressions over
the message), its alerts and dashboard read metric types. A check of the Terraform text alone (test_terraform.py)
cannot tell whether anything writes those lines, so this test runs the code paths that do, captures what they
log and what the origin exports, and matches every filter, extractor and metric type against it:

- a log-based metric over a job's lines (``local.event_filter``): every clause of its filter is understood
  (resource type, the job's name, message regexes) and some line a code path of *that* job logged matches them
  all; each label extractor finds its value in that line and the value extractor a number;
- ``logging.googleapis.com/user/<name>``: a log-based metric of the module (checked above);
- ``workload.googleapis.com/<name>``: an instrument the origin exports (serving/http/telemetry.py, memory exporter);
- ``dataflow.googleapis.com/job/user_counter``: the ``metric_name`` it selects is a counter name the code declares
  (a source scan: running each counter's DoFn here would repeat the transform tests);
- other types are Google's own (Pub/Sub, Cloud Run, Dataflow job metrics), listed in PLATFORM_TYPES.

Log metrics over platform logs (the authority job's Cloud Scheduler attempts) have no code path to run; they are
pinned by test_terraform.py's PLATFORM_LOG_METRICS. The mutation tests rename a line in the code and a filter in
Terraform and show that the check fails.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from deploy_helpers import REPO_ROOT

from stores import StoreConfig, StoreError, open_stores
from stores.cdn import CloudCdnPurger
from tests.deploy.test_terraform import MODULES, PLATFORM_LOG_METRICS, Module, _expand, render_dashboard
from tests.stores.test_cdn import _ComputeStub, _session, compute  # noqa: F401 (compute: the Compute stub fixture)
from tests.transforms.editions.test_breaking import _LedgerState, _page
from transforms.editions.beam.announce import AnnounceBreakingFn
from transforms.editions.publish.breaking import candidates
from transforms.editions.publish.snapshots import SnapshotPublisher
from transforms.ingest import poller
from transforms.ingest.fetcher import FetchResult

FOLDER = MODULES / "monitoring"
# Metric types Google's services write themselves (no code of ours involved).
PLATFORM_TYPES = {
    "pubsub.googleapis.com/subscription/num_undelivered_messages",
    "pubsub.googleapis.com/topic/send_message_operation_count",
    "run.googleapis.com/request_count",
    "run.googleapis.com/request_latencies",
    "dataflow.googleapis.com/job/data_watermark_age",
    "dataflow.googleapis.com/job/system_lag",
}
JOB_VARS = {"stories_job", "ingest_job"}


def _card(aid: str, seen: str) -> dict:
    return {
        "article_id": aid,
        "url": f"https://paper.example/{aid}",
        "title": f"Story {aid}",
        "publisher_id": "paper",
        "published_at": seen,
        "first_seen_at": seen,
    }


def _edition_page(version: int, fresh: str | None = None) -> dict:
    stories = [
        {
            "story_id": str(n + 1),
            "rank": n + 1,
            "representative": _card(f"a{n}", "2026-01-01T11:00:00Z"),
            "supporting": [],
            "article_count": 1,
            "publisher_count": 1,
        }
        for n in range(3)
    ]
    if fresh:
        stories[0]["supporting"] = [_card("new", fresh)]
        stories[0]["article_count"] = 2
    doc = {
        "schema": "newsroom.edition_page/v1",
        "edition": "us-en",
        "section": "top",
        "version": version,
        "cycle": "2026-01-01T12:00:00Z",
        "generated_at": "2026-01-01T12:00:00Z",
        "stories": stories,
    }
    return {"kind": "edition_page", "pointer": "us-en/top", "version": version, "doc": doc, "min_stories": 1}


class _Page:
    """A fetcher answering every URL with one article page."""

    def fetch(self, url):
        return FetchResult(url, url, 200, {"Content-Type": "text/html"}, b"<p>", fetched_at_ms=43_000)


def stories_lines(tmp_path: Path, compute_endpoint: str) -> None:
    """The stories job's code paths behind its lines: pages published (one with a new article), unchanged and
    rejected (SnapshotPublisher), and a Breaking purge Compute refuses (AnnounceBreakingFn)."""
    stores = open_stores(StoreConfig(data_dir=str(tmp_path / "stories")))
    pub = SnapshotPublisher(stores, languages=("en",), clock=lambda: 1767268800.0)  # 2026-01-01T12:00:00Z
    fresh = "2026-01-01T11:59:00Z"
    outcomes = [
        pub.publish(p)["outcome"] for p in (_edition_page(10), _edition_page(11, fresh), _edition_page(12, fresh))
    ]
    assert outcomes == ["published", "published", "unchanged"], outcomes
    pub.publish({**_edition_page(13), "doc": {**_edition_page(13)["doc"], "stories": []}})  # rejected: empty
    fn = AnnounceBreakingFn(StoreConfig(), cdn="none")
    fn.purger = CloudCdnPurger("proj-1", "newsroom-api", None, _session(), compute_endpoint)
    _ComputeStub.status = 403
    try:
        with pytest.raises(StoreError):
            list(fn.process(("us-en", candidates(_page(), {"outcome": "published"})[0][1]), ledger=_LedgerState()))
    finally:
        _ComputeStub.status = 200


def ingest_lines() -> None:
    """The ingest job's code path behind its line: new items fetched for items-raw (poll and WebSub)."""
    for source in ("FEED", "WEBSUB"):
        d = poller.Discovery(
            url=f"https://paper.example/{source}",
            feed_url="https://paper.example/rss",
            publisher_id="paper",
            source=source,
            first_seen_at=1_000,
            claim_key=source,
            owner="o",
            tier="authoritative",
            published_ms=1_000,
        )
        poller.fetch_page(_Page(), d, None, 2_000, sleep=lambda s: None)


def captured(caplog, run) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        run()
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("newsroom.")]


def origin_metric_names() -> set[str]:
    from serving.http.telemetry import OriginMetrics

    holder = SimpleNamespace(last_success=None, current=SimpleNamespace(pages={}), rejected=0)
    metrics = OriginMetrics(SimpleNamespace(holder=holder, shedder=SimpleNamespace(shed=0)), exporter="memory")
    metrics.record_request("edition_section", 200, 0.01)
    return set(metrics.snapshot())


def declared_counters() -> set[str]:
    """Counter names the jobs' code declares: string literals passed to Metrics.counter or to a count callback
    (f-string placeholders as ``X``)."""
    names: set[str] = set()
    for path in (REPO_ROOT / "transforms").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and node.args:
                func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if func in {"counter", "_count", "count", "inc"}:
                    for arg in node.args:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            names.add(arg.value)
                        elif isinstance(arg, ast.JoinedStr):
                            names.add("".join(v.value if isinstance(v, ast.Constant) else "X" for v in arg.values))
    return names


_REGEX = r'"((?:[^"\\]|\\.)*)"'


def _unquote(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


def event_filters(module: Module) -> dict[str, str]:
    """``local.event_filter`` as Terraform evaluates it (python-hcl2 leaves a ``for`` expression as its text)."""
    m = re.search(r'join\("(.*?)", \[(.*)\]\)', module.locals["event_filter"])
    assert m, "local.event_filter is not join(sep, [clauses]) per event"
    clauses = [_unquote(c) for c in re.findall(_REGEX, m.group(2))]
    return {
        event: m.group(1).join(c.replace("${e.job}", spec["job"]).replace("${event}", event) for c in clauses)
        for event, spec in module.locals["log_events"].items()
    }


def metric_filter(module: Module, metric: dict) -> str:
    flt = metric["filter"]
    for event, text in event_filters(module).items():
        flt = flt.replace(f'${{local.event_filter["{event}"]}}', text)
    return flt


def check_log_metric(name: str, flt: str, metric: dict, lines_by_job: dict[str, list[str]]) -> str:
    """The line of its job that ``metric`` counts; AssertionError naming what is missing."""
    job, regexes = None, []
    for clause in re.split(r" AND ", flt):
        clause = clause.strip()
        if clause == 'resource.type="dataflow_step"':
            continue
        m = re.fullmatch(r'resource\.labels\.job_name="\$\{var\.(\w+)\}"', clause)
        if m:
            job = m.group(1)
            continue
        m = re.fullmatch(r'jsonPayload\.message=~"(.*)"', clause)
        assert m, f"log metric {name}: a filter clause this check does not understand: {clause}"
        regexes.append(m.group(1))
    assert job in JOB_VARS, f"log metric {name}: reads no job's lines ({flt})"
    extractors = [metric.get("value_extractor")] + list(metric.get("label_extractors", {}).values())
    pulls = []
    for ex in filter(None, extractors):
        m = re.fullmatch(r'REGEXP_EXTRACT\(jsonPayload\.message, "(.*)"\)', ex)
        assert m, f"log metric {name}: extractor {ex} is not a REGEXP_EXTRACT of the message"
        pulls.append((ex is metric.get("value_extractor"), m.group(1)))
    for line in lines_by_job[job]:
        if all(re.search(rx, line) for rx in regexes) and all(re.search(rx, line) for _, rx in pulls):
            for is_value, rx in pulls:
                if is_value:
                    float(re.search(rx, line).group(1))
            return line
    raise AssertionError(f"log metric {name}: no line the {job} code paths log matches {regexes} and {pulls}")


def check_contract(module: Module, folder: Path, lines_by_job, workload: set[str], counters: set[str]) -> None:
    module = module.instances()  # the daily jobs' metrics and alerts, one per for_each key
    metrics = module.of_type("google_logging_metric")
    for name, metric in metrics.items():
        if name in PLATFORM_LOG_METRICS:
            continue
        check_log_metric(name, metric_filter(module, metric), metric, lines_by_job)
    filters = [
        _expand(module, str(c[kind][0]["filter"]))
        for policy in module.of_type("google_monitoring_alert_policy").values()
        for c in policy["conditions"]
        for kind in ("condition_threshold", "condition_absent")
        if kind in c
    ]
    dashboard = render_dashboard(module, folder)
    filters += [
        ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"]
        for tile in dashboard["mosaicLayout"]["tiles"]
        for ds in tile["widget"].get("xyChart", {}).get("dataSets", [])
    ]
    log_metrics = {m["name"] for m in metrics.values()}
    for flt in filters:
        for mtype in re.findall(r'metric\.type="([^"]+)"', flt):
            if mtype.startswith("logging.googleapis.com/user/"):
                assert mtype.split("/user/", 1)[1] in log_metrics, f"{mtype}: no such log-based metric"
            elif mtype.startswith("workload.googleapis.com/"):
                assert mtype.split("/", 1)[1] in workload, f"{mtype}: the origin exports no such instrument"
            elif mtype == "dataflow.googleapis.com/job/user_counter":
                m = re.search(r'metric\.label\.metric_name=(?:"([^"]+)"|monitoring\.regex\.full_match\("(.+?)"\))', flt)
                assert m, f"a user_counter chart selects no counter: {flt}"
                pattern = m.group(2) or re.escape(m.group(1))
                assert any(re.fullmatch(pattern, c) for c in counters), f"no code declares the counter {pattern}"
            else:
                assert mtype in PLATFORM_TYPES, f"{mtype}: neither ours (fed by the code) nor a Google metric"


@pytest.fixture
def signals(tmp_path, caplog, compute):  # noqa: F811
    _, endpoint = compute
    return (
        {
            "stories_job": captured(caplog, lambda: stories_lines(tmp_path, endpoint)),
            "ingest_job": captured(caplog, ingest_lines),
        },
        origin_metric_names(),
        declared_counters(),
    )


def test_every_alert_and_chart_reads_a_signal_the_code_emits(signals):
    lines, workload, counters = signals
    assert any("release_to_page_s=" in line for line in lines["stories_job"]), lines
    check_contract(Module.load(FOLDER), FOLDER, lines, workload, counters)


@pytest.mark.parametrize(
    "old,new",
    [
        ("newsroom.item_discovered ", "newsroom.item_found "),  # a renamed line
        ("newsroom.edition_heartbeat ", "newsroom.edition_beat "),
        (" release_to_page_s=", " page_delay_s="),  # a renamed field
        ("newsroom.cdn_purge_failed ", "newsroom.purge_failed "),
    ],
)
def test_the_contract_fails_when_the_code_renames_a_line_or_a_field(signals, old, new):
    lines, workload, counters = signals
    renamed = {job: [line.replace(old, new) for line in got] for job, got in lines.items()}
    assert renamed != lines, f"{old!r} is in no captured line"
    with pytest.raises(AssertionError, match="log metric"):
        check_contract(Module.load(FOLDER), FOLDER, renamed, workload, counters)


@pytest.mark.parametrize(
    "old,new",
    [
        ('newsroom.origin.catalog_age\\"', 'newsroom.origin.catalogue_age\\"'),
        ('metric_name=\\"takedowns_applied\\"', 'metric_name=\\"takedowns_done\\"'),
        ('jsonPayload.message=~\\" discovery_s=\\""', 'jsonPayload.message=~\\" delay_s=\\""'),
        ('job = var.ingest_job, fields = ["tier"', 'job = var.stories_job, fields = ["tier"'),
    ],
)
def test_the_contract_fails_when_terraform_reads_a_signal_nothing_emits(signals, old, new, tmp_path):
    lines, workload, counters = signals
    files = {p.name: p.read_text() for p in FOLDER.glob("*.tf")}
    (tmp_path / "dashboard.json.tftpl").write_text((FOLDER / "dashboard.json.tftpl").read_text().replace(old, new))
    assert any(old in t for t in files.values()) or old in (FOLDER / "dashboard.json.tftpl").read_text(), old
    broken = Module({name: text.replace(old, new) for name, text in files.items()})
    with pytest.raises(AssertionError):
        check_contract(broken, tmp_path, lines, workload, counters)
