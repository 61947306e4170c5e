"""`newsroom run`'s job plan, cheaply (the end-to-end run is tests/devtools/test_run.py, ~5 minutes): the
streaming jobs it starts on the embedded backends, and that For you's "also read" has its co-visitation job."""

from __future__ import annotations

import argparse

from devtools import run
from stores import StoreConfig


def _args(**kw):
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    return parser.parse_args([f"--{k}={v}" for k, v in kw.items()])


def test_run_starts_the_stories_and_the_covisitation_jobs_on_the_same_stores_and_bus(tmp_path):
    config = StoreConfig(backend="embedded", data_dir=str(tmp_path), bus="pubsub", project="demo")
    plan = dict(run.job_plan(_args(speed=20, embedder="hash"), config, "demo", world=object()))
    assert list(plan) == ["stories", "covisit"]
    for name, argv in plan.items():
        assert argv[1:3] == ["-m", f"pipelines.{name}"]
        assert f"--data_dir={tmp_path}" in argv and "--bus=pubsub" in argv and "--project=demo" in argv
    assert "--embedder=hash" in plan["stories"] and "--link_interval_s=30" in plan["stories"]
    assert not any(a.startswith(("--embedder", "--link_interval")) for a in plan["covisit"])


def test_run_creates_the_read_events_topic_the_origin_publishes_reads_to():
    assert "read-events" in run.TOPICS
    from pipelines import covisit

    assert covisit.TOPIC in run.TOPICS


def test_the_local_run_computes_user_clusters_once_reads_exist_then_on_its_schedule(tmp_path):
    """`newsroom run`'s user-cluster schedule: nothing while the profile store has no reads; the first tick after
    reads appear runs the real job (a child process) and five readers of the same stories share clusters the
    origin's "readers like you" reads; the next run waits ``every_s``."""
    import time

    from stores.profiles import open_profile_store
    from stores.userclusters import open_user_cluster_store
    from tests.pipelines.test_userclusters_job import SAME, add_reads
    from transforms.userclusters.minhash import clusters_of

    config = StoreConfig(backend="embedded", data_dir=str(tmp_path))
    schedule = run.UserClusterSchedule(config, every_s=600, logs=tmp_path)
    assert schedule.tick() is None and schedule.runs == 0  # no reads yet: nothing to cluster
    now_ms = int(time.time() * 1000)
    profiles = open_profile_store(config)
    for r in range(5):
        add_reads(profiles, f"fan{r}", SAME, now_ms - 60_000)
    job = schedule.tick()
    assert job is not None and job.wait(timeout=300) == 0, (tmp_path / "userclusters-job.log").read_text()[-2000:]
    clusters = open_user_cluster_store(config)
    assert clusters.membership("fan0", now_ms + 1) == sorted(clusters_of(SAME))
    assert schedule.tick() is None and schedule.runs == 1  # not due again before every_s
    assert schedule.tick(now_s=time.time() + 601) is not None and schedule.runs == 2
    schedule.stop()
    assert schedule.proc.poll() is not None and schedule.tick(now_s=time.time() + 1300) is None


def test_the_run_schedules_the_user_cluster_job_by_default():
    args = _args()
    assert args.userclusters_every_min == 10.0
    assert _args(userclusters_every_min=0).userclusters_every_min == 0


def test_ctrl_c_drains_only_while_the_ingest_outbox_holds_a_claimed_page(tmp_path, monkeypatch):
    """`newsroom run`'s stop waits for the stories job while a claimed page is unsettled (the article count still
    decides when a job that fell behind gives up), and not at all once every claimed page is stored: the fixed 10 s
    of quiet it waited before cost every Ctrl-C (and every end-to-end test of the run) 10 s for nothing."""
    from stores import open_store

    config = StoreConfig(backend="embedded", data_dir=str(tmp_path))
    clock = {"now": 1000.0, "sleeps": 0}

    def sleep(s):
        clock["now"] += s
        clock["sleeps"] += 1

    monkeypatch.setattr(run.time, "time", lambda: clock["now"])
    monkeypatch.setattr(run.time, "sleep", sleep)
    ingest = type("Ingest", (), {"stopped": 0, "stop": lambda self: setattr(self, "stopped", self.stopped + 1)})()
    job = type("Job", (), {"poll": lambda self: None})()

    run._drain(ingest, job, config)  # nothing held: done at once
    assert ingest.stopped == 1 and clock["sleeps"] == 0

    outbox = open_store("feeds", config)
    outbox.hold({"item": "i1", "owner": "o1", "first_seen_at": 1, "due": 2, "discovery": {"url": "https://a.test/1"}})
    run._drain(ingest, job, config)  # held, and no article comes: the quiet rule (10 s) ends it
    assert ingest.stopped == 2 and 10 <= clock["now"] - 1000.0 <= 13

    outbox.settle("i1", 1)
    before = clock["sleeps"]
    run._drain(ingest, job, config)
    assert clock["sleeps"] == before


def test_the_stop_line_says_how_to_start_afresh_from_the_data_dir_it_ran_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Makefile").write_text("clean:\n\trm -rf .newsroom .pytest_cache\n")
    assert run.afresh(str(tmp_path / ".newsroom")) == "`make clean` to start afresh"  # what `make clean` removes
    custom = tmp_path / "my runs" / "x"
    assert run.afresh(str(custom)) == f"`rm -rf '{custom}'` to start afresh"  # not `make clean`: it leaves this
