"""Extraction budget: a page under the size cap that keeps extraction busy for minutes (3.6 MB of ~450k
paragraphs: > 180 s of trafilatura on 60feb56) is dead-lettered ``extraction_budget_exceeded`` once the per-page
budget is spent, and the next pages go on. The budget is enforced in a child process that is killed (real
processes, real trafilatura; the budget is set low here so the test is quick)."""

from __future__ import annotations

import os
import threading
import time

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.transforms.articles.conftest import T0, WIRE_REPORT, make_html, make_raw
from transforms.articles.page import MAX_PAGE_BYTES, Rejected

CLOCK = lambda: T0  # noqa: E731
BUDGET_S = 2.0


def hostile_page(paragraphs: int = 450_000) -> bytes:
    """The probe's page: 3.6 MB of empty paragraphs (fewer in the Beam test: 60k already take > 20 s, and a
    3.6 MB element costs the Beam test runner ~30 s of its own)."""
    body = b"<html><head><title>Many paragraphs</title></head><body>" + b"<p>x</p>" * paragraphs + b"</body></html>"
    assert len(body) < MAX_PAGE_BYTES  # under the size cap: only a time budget can stop it
    return body


def good_raw(n: int) -> dict:
    url = f"https://dailyherald.test/world/quake-{n}"
    return make_raw(url, make_html(f"Quake hits coast {n}", WIRE_REPORT, canonical=url), fetched_at=T0)


def test_a_page_over_budget_is_dead_lettered_and_the_job_goes_on():
    from transforms.articles.beam import DEAD_LETTER, NormalizeArticles

    hostile = make_raw("https://dailyherald.test/world/hostile", hostile_page(60_000), fetched_at=T0)
    raws = [good_raw(1), hostile, good_raw(2)]
    p = TestPipeline(runner="FnApiRunner")
    out = p | beam.Create(raws, reshuffle=False) | NormalizeArticles(clock=CLOCK, budget_s=BUDGET_S)
    assert_that(
        out.articles | "Titles" >> beam.Map(lambda a: a["title"]),
        equal_to(["Quake hits coast 1", "Quake hits coast 2"]),
        label="articles",
    )
    assert_that(
        out[DEAD_LETTER] | "Reasons" >> beam.Map(lambda d: (d["reason"], d["key"], d["detail"])),
        equal_to(
            [
                (
                    "extraction_budget_exceeded",
                    raws[1]["item_id"],
                    f"extraction budget exceeded: more than {BUDGET_S:g} s",
                )
            ]
        ),
        label="dead",
    )
    p.run().wait_until_finish()


def test_the_worker_is_killed_on_overrun_and_reused_otherwise():
    from transforms.articles.worker import NormalizeWorker

    with NormalizeWorker(budget_s=BUDGET_S) as worker:
        assert worker.normalize(good_raw(1))["title"] == "Quake hits coast 1"
        pid = worker.pid
        assert worker.normalize(good_raw(2))["title"] == "Quake hits coast 2"
        assert worker.pid == pid and worker.restarts == 0  # one child for many pages
        with pytest.raises(Rejected) as exc:
            worker.normalize(make_raw("https://dailyherald.test/world/hostile", hostile_page(), fetched_at=T0))
        assert exc.value.reason == "extraction_budget_exceeded"
        assert worker.restarts == 1
        with pytest.raises(ProcessLookupError):  # the runaway child is gone, not left burning a core
            os.kill(pid, 0)
        assert worker.normalize(good_raw(3))["title"] == "Quake hits coast 3"  # a fresh child goes on
        with pytest.raises(Rejected) as exc:  # ordinary rejections still come back with their own reason
            worker.normalize(make_raw("https://dailyherald.test/x", b"%PDF-1.7 binary", fetched_at=T0))
        assert exc.value.reason == "not_html"


def test_a_worker_that_dies_on_a_page_dead_letters_it():
    """The kernel's OOM killer (or a crash in C code) takes the child down mid-page: that page gets a reason."""
    from transforms.articles.worker import NormalizeWorker

    with NormalizeWorker(budget_s=60) as worker:
        worker.normalize(good_raw(1))
        pid = worker.pid
        killer = threading.Timer(0.5, os.kill, args=(pid, 9))
        killer.start()
        t0 = time.monotonic()
        with pytest.raises(Rejected) as exc:
            worker.normalize(make_raw("https://dailyherald.test/world/hostile", hostile_page(), fetched_at=T0))
        killer.join()
        assert exc.value.reason == "extraction_worker_died"
        assert time.monotonic() - t0 < 30  # noticed at once, not after the 60 s budget
        assert worker.normalize(good_raw(2))["title"] == "Quake hits coast 2"
