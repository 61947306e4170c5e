"""`newsroom backfill --from_store`: the system's own article store (latest versions) through the same transforms,
its --from/--to bounds applied, an unreadable row a dead letter."""

from __future__ import annotations

import json

import pytest

from tests.pipelines.test_backfill import EVENTS, read


def articles(sample_record):
    from schemas import codec

    out = []
    for i, (title, body) in enumerate(EVENTS * 2):
        at = 1_767_225_600_000 + i * 60_000
        fields = dict(article_id=f"art{i:02d}", title=title, lede=body, body=body, first_seen_at=at, published_at=at)
        fields |= dict(canonical_url=f"https://pub{i}.example/{i}", publisher_id=f"pub{i}", entities=[])
        out.append(codec.check("Article", sample_record("Article", **fields)))
    return out


def test_backfill_from_store_reads_the_latest_versions_and_dead_letters_bad_rows(tmp_path, sample_record):
    from pipelines.backfill import run
    from stores import StoreConfig, open_store

    live = tmp_path / "live"
    store = open_store("articles", StoreConfig(data_dir=str(live)))
    records = articles(sample_record)
    for r in records:
        store.write(r)
    store.db.connect().execute("INSERT INTO articles VALUES ('zz-bad', 1, 'h', x'00ff', NULL)")
    store.db.connect().commit()
    out = tmp_path / "out"
    argv = [f"--from_store={live}", f"--output={out}", "--embedder=hash", "--exact_index"]
    assert run([*argv, "--to=2026-01-01T00:05:00Z"]) == 0
    got = read(out / "assignments.jsonl")
    assert sorted(a["article_id"] for a in got) == [f"art{i:02d}" for i in range(5)]  # --to kept the first five
    dead = read(out / "dead_letters.jsonl")
    assert [(d["key"], d["reason"]) for d in dead] == [("zz-bad", "undecodable")]
    assert json.loads((out / "manifest.json").read_text())["counts"]["dead_letters"] == 1


def test_from_store_and_input_together_are_refused(tmp_path, capsys):
    from pipelines.cli import main as newsroom

    assert newsroom(["backfill", "--from_store", str(tmp_path), "--input", "x.jsonl", "--output", "o"]) == 2
    assert newsroom(["backfill", "--from_store", str(tmp_path / "none"), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "give one" in err[0] and "no article store there" in err[1]
    assert "the --data_dir `newsroom run` wrote" in err[1] and "--backend=gcp" in err[1]  # what to do instead


def test_from_store_on_gcp_reads_productions_bigtable_article_table(tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.backfill import resolve

    gcp = ["--backend=gcp", "--snapshot_bucket=b", "--project=p", "--bigtable_instance=i", f"--output={tmp_path}"]
    for flag in ("--from_store", "--from_store=bigtable"):
        job = resolve(PipelineOptions([*gcp, flag, "--namespace=bf1"]))
        assert (job.source.backend, job.source.namespace, job.source.bigtable_instance) == ("gcp", "", "i")
        assert job.store.namespace == "bf1"  # the run writes its own namespace, reads production's
    with pytest.raises(ValueError, match="names an embedded store"):
        resolve(PipelineOptions([*gcp, "--from_store=/data/live"]))
    job = resolve(PipelineOptions([f"--from_store={tmp_path / 'live'}", f"--output={tmp_path}"]))
    assert (job.source.backend, job.source.data_dir) == ("embedded", str(tmp_path / "live"))


def test_a_row_it_cannot_read_is_dead_lettered_at_the_time_it_was_read():
    import time

    from transforms.stories.beam.backfill import DecodeStoreArticleFn

    before = int(time.time() * 1000)
    got = [
        *DecodeStoreArticleFn().process((0, 1, "zz-bad", b"\x00\xff")),
        *DecodeStoreArticleFn().process((0, 2, "zz-none", None)),
    ]
    after = int(time.time() * 1000)
    assert [(d.value["key"], d.value["reason"]) for d in got] == [("zz-bad", "undecodable"), ("zz-none", "undecodable")]
    assert all(before <= d.value["at"] <= after for d in got), [d.value["at"] for d in got]  # was 0 (1970)
