"""`newsroom run`'s job plan, cheaply (the end-to-end run is tests/pipelines/test_main.py, ~5 minutes): the
streaming jobs it starts on the embedded backends, and that For you's "also read" has its co-visitation job."""

from __future__ import annotations

import argparse

from pipelines import main
from stores import StoreConfig


def _args(**kw):
    parser = argparse.ArgumentParser()
    main.add_arguments(parser)
    return parser.parse_args([f"--{k}={v}" for k, v in kw.items()])


def test_run_starts_the_stories_and_the_covisitation_jobs_on_the_same_stores_and_bus(tmp_path):
    config = StoreConfig(backend="embedded", data_dir=str(tmp_path), bus="pubsub", project="demo")
    plan = dict(main.job_plan(_args(speed=20, embedder="hash"), config, "demo", world=object()))
    assert list(plan) == ["stories", "covisit"]
    for name, argv in plan.items():
        assert argv[1:3] == ["-m", f"pipelines.{name}"]
        assert f"--data_dir={tmp_path}" in argv and "--bus=pubsub" in argv and "--project=demo" in argv
    assert "--embedder=hash" in plan["stories"] and "--link_interval_s=30" in plan["stories"]
    assert not any(a.startswith(("--embedder", "--link_interval")) for a in plan["covisit"])


def test_run_creates_the_read_events_topic_the_origin_publishes_reads_to():
    assert "read-events" in main.TOPICS
    from pipelines import covisit

    assert covisit.TOPIC in main.TOPICS
