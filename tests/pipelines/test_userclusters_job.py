"""The daily user-cluster job end to end: reads in the profile store -> `newsroom userclusters` -> memberships in
the user-cluster store, on the embedded backend and on the Bigtable emulator (``store_config``: both)."""

from __future__ import annotations

import pytest

from stores.profiles import open_profile_store
from stores.userclusters import open_user_cluster_store
from tests.pipelines.test_stories_job import store_argv
from transforms.userclusters.minhash import clusters_of

NOW = 1_767_225_600_000
DAY = 86_400_000
SAME = [7_394_201_113_445_597_184 + n for n in range(6)]


def add_reads(profiles, reader: str, stories, at: int) -> None:
    profiles.append_reads(
        reader,
        [
            {"event_id": f"{reader}-{i}", "story_id": str(s), "article_id": None, "at": at + i, "kind": "READ"}
            for i, s in enumerate(stories)
        ],
    )


def test_the_job_writes_every_readers_clusters(store_config):
    from pipelines.userclusters import run

    profiles, clusters = open_profile_store(store_config), open_user_cluster_store(store_config)
    for r in range(5):
        add_reads(profiles, f"fan{r}", SAME, NOW - DAY)  # five readers of the same stories: one group
    add_reads(profiles, "loner", range(100, 106), NOW - DAY)  # nobody like it: no cluster of five
    add_reads(profiles, "few", SAME[:2], NOW - DAY)  # two stories: not clustered
    add_reads(profiles, "stale", SAME, NOW - 100 * DAY)  # reads past the 90-day lookback do not count
    add_reads(profiles, "quiet", SAME, NOW - DAY)
    profiles.update("quiet", lambda d: {**d, "paused": True})  # paused: its reads are not clustered
    clusters.put_membership("loner", [123], NOW - DAY)  # yesterday's clusters of a reader who now has none
    run(store_argv(store_config), now_ms=NOW)
    want = sorted(clusters_of(SAME))
    assert all(clusters.membership(f"fan{r}", NOW) == want for r in range(5))
    assert clusters.membership("loner", NOW) == []  # replaced by an empty list, not left as yesterday's
    assert clusters.membership("few", NOW) == [] and clusters.membership("stale", NOW) == []
    assert clusters.membership("quiet", NOW) == []


def test_a_fifth_member_is_needed(embedded_store_config):
    from pipelines.userclusters import run

    profiles, clusters = open_profile_store(embedded_store_config), open_user_cluster_store(embedded_store_config)
    for r in range(4):
        add_reads(profiles, f"fan{r}", SAME, NOW - DAY)
    run(store_argv(embedded_store_config), now_ms=NOW)
    assert clusters.membership("fan0", NOW) == []
    run(store_argv(embedded_store_config) + ["--min_members=4"], now_ms=NOW)
    assert len(clusters.membership("fan0", NOW)) == 10


def test_bad_flags_are_refused_naming_the_flag(embedded_store_config):
    from pipelines.userclusters import run

    with pytest.raises(ValueError, match="--hashes_per_cluster"):
        run(store_argv(embedded_store_config) + ["--hashes_per_cluster=0"])
    with pytest.raises(ValueError, match="at most 1024"):
        run(store_argv(embedded_store_config) + ["--hashes_per_cluster=100", "--clusters_per_reader=20"])


def test_the_job_reads_the_click_log_in_key_ranges_each_once(store_config):
    """Months of clicks in the click log (the co-visitation job's), read in --splits ranges: every range is read
    once, every reader comes out of exactly one range, and clicks 60 days old still count. On Bigtable the cuts are
    the table's sampled tablet boundaries (the emulator's vary from call to call, a small table may be one range),
    so the job's own count of the ranges it cut is what each-read-once is checked against."""
    from apache_beam.metrics.metric import MetricsFilter

    from pipelines.userclusters import run

    config = store_config
    profiles, clusters = open_profile_store(config), open_user_cluster_store(config)
    fans = [f"fan{r:03d}" for r in range(40 if config.backend == "embedded" else 400)]
    clusters.log_clicks([(r, s, NOW - 60 * DAY + i) for r in fans for i, s in enumerate(SAME)])
    add_reads(profiles, fans[0], SAME[:1], NOW - DAY)  # also in the profile: one reader, not two
    add_reads(profiles, "quiet", SAME, NOW - DAY)
    clusters.log_clicks([("quiet", s, NOW - DAY) for s in SAME])
    profiles.update("quiet", lambda d: {**d, "paused": True})  # paused: its clicks are not clustered
    result = run(store_argv(config) + ["--splits=8"], now_ms=NOW)

    def counter(name):
        got = result.metrics().query(MetricsFilter().with_name(name))["counters"]
        return sum(c.committed for c in got)

    if config.backend == "embedded":
        assert counter("ranges") == len(clusters.click_splits(8)) + 1 == 8
    assert 1 <= counter("ranges") <= 8
    assert counter("ranges_read") == counter("ranges")  # each split read once
    assert counter("readers") == len(fans)  # each reader once, the paused one left out
    assert counter("memberships_written") == len(fans)
    want = sorted(clusters_of(SAME))
    assert all(clusters.membership(r, NOW) == want for r in fans) and clusters.membership("quiet", NOW) == []


def test_clicks_logged_before_a_delete_are_not_clustered(store_config):
    """The co-visitation job appended a reader's clicks after the reader deleted the profile (it read what the
    origin had published just before): the daily job clusters only the profile's own reads of a reader who deleted
    since the lookback began, so the deleted reads come back nowhere; a delete older than the lookback left only
    clicks too old to count, and that reader's log is used."""
    from pipelines.userclusters import run

    profiles, clusters = open_profile_store(store_config), open_user_cluster_store(store_config)
    fans = [f"fan{r}" for r in range(5)]
    clusters.log_clicks([(r, s, NOW - DAY + i) for r in fans + ["gone", "back", "old"] for i, s in enumerate(SAME)])
    profiles.delete("gone", at=NOW - DAY // 2)  # after its clicks were accepted
    profiles.delete_history("back", at=NOW - DAY // 2)
    add_reads(profiles, "back", SAME[:2], NOW - DAY // 4)  # read again after the delete: two stories only
    profiles.delete("old", at=NOW - 200 * DAY)  # long before the lookback
    run(store_argv(store_config), now_ms=NOW)
    want = sorted(clusters_of(SAME))
    assert all(clusters.membership(r, NOW) == want for r in fans)
    assert clusters.membership("gone", NOW) == [] and clusters.membership("back", NOW) == []
    assert clusters.membership("old", NOW) == want
