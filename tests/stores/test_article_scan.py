"""The article store's full scan for `newsroom backfill --from_store`, on the embedded store and on the real Bigtable
emulator: the store's split points cut the ids into key ranges that cover every row once, the Beam read
(stores.beam_io.ReadLatestArticles, one scan per range) reads each range once and yields every row once, and the
backfill's decoder turns a row it cannot read into a dead letter with the article id and the reason."""

from __future__ import annotations

import collections
import hashlib
import json

from schemas import codec
from stores import open_store
from stores.beam_io import key_ranges

N = 400  # enough rows for the Bigtable emulator to sample several keys inside the article rows


def _fill(store, sample_record) -> list[str]:
    ids = []
    for i in range(N):
        aid = hashlib.sha256(f"https://pub.example/{i}".encode()).hexdigest()[:32]
        at = 1_767_225_600_000 + i * 60_000
        fields = dict(article_id=aid, title=f"Headline {i} " + "word " * 20, lede="x", body="y " * 50)
        fields |= dict(first_seen_at=at, published_at=at, canonical_url=f"https://pub.example/{i}", entities=[])
        store.write(codec.check("Article", sample_record("Article", **fields)))
        ids.append(aid)
    return sorted(ids)


def _plant_bad_rows(store, config) -> list[str]:
    """A record no reader can decode, and (Bigtable) a row with its head but no record: both dead letters."""
    if config.backend == "embedded":
        store.db.connect().execute("INSERT INTO articles VALUES ('zz-bad', 1, 'h', x'00ff', NULL)")
        store.db.connect().commit()
        return ["zz-bad"]
    for key, cells in ((b"a#zz-bad", {("d", b"record"): b"\x00\xff"}), (b"a#zz-headless", {("m", b"version"): b"1"})):
        row = store.t.table.direct_row(key)
        for (family, q), value in cells.items():
            row.set_cell(family, q, value)
        row.commit()
    return ["zz-bad", "zz-headless"]


def test_key_ranges_cover_the_ids_once():
    assert key_ranges([]) == [(0, "", "")]
    assert key_ranges(["m", "c", "m", ""]) == [(0, "", "c"), (1, "c", "m"), (2, "m", "")]


def test_split_points_and_the_parallel_read_give_every_row_once(store_config, sample_record, tmp_path):
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from transforms.common import DEAD_LETTER
    from transforms.stories.beam.backfill import ReadStoreArticles

    store = open_store("articles", store_config)
    ids = _fill(store, sample_record)
    bad = _plant_bad_rows(store, store_config)
    points = store.split_points(8)
    ranges = key_ranges(points)
    assert 3 <= len(ranges) <= 8, points  # the store split itself (Bigtable: its sample keys)
    scanned = [aid for _, start, end in ranges for aid, _ in store.scan_latest(start, end)]
    assert scanned == sorted(ids + bad)  # the ranges, scanned one after the other: every row once, in id order
    assert [a for a, _ in store.latest_records(limit=N + 5)] == sorted([*ids, "zz-bad"])  # a row with a record

    def keep(pcoll, name, pick):  # FnApiRunner pickles the graph: the rows come back through a file
        path = str(tmp_path / f"{name}.json")
        rows = pcoll | f"Pick{name}" >> beam.Map(pick) | f"All{name}" >> beam.combiners.ToList()
        rows | f"Write{name}" >> beam.Map(lambda r, path: open(path, "w").write(json.dumps(r)), path=path)
        return path

    p = beam.Pipeline(runner=FnApiRunner())
    read = p | ReadStoreArticles(store_config, points)
    paths = {
        "order": keep(read["order"], "order", list),
        "dead": keep(read[DEAD_LETTER], "dead", lambda d: [d["key"], d["reason"], d["stage"]]),
        "articles": keep(read["articles"], "articles", lambda a: a["article_id"]),
    }
    result = p.run()
    result.wait_until_finish()
    ranges_read = result.metrics().query(MetricsFilter().with_name("key_ranges_read"))["counters"]
    assert sum(c.committed for c in ranges_read) == len(ranges)  # each range scanned once
    seen = {name: json.loads(open(path).read()) for name, path in paths.items()}
    order = seen["order"]
    assert sorted(a for _, _, a in order) == ids and len(order) == N  # every decodable row once
    per_range = collections.defaultdict(list)
    for index, row, aid in order:
        per_range[index].append((row, aid))
    for index, rows in per_range.items():
        _, start, end = ranges[index]
        assert all(start <= aid and (not end or aid < end) for _, aid in rows)  # a row from its own range
    assert sorted(seen["articles"]) == ids
    assert sorted(seen["dead"]) == [[b, "undecodable", "from_store"] for b in bad]
