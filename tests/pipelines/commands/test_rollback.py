"""``newsroom rollback`` moves a page's pointer back, on both backends (embedded, and Bigtable + GCS emulators)."""

from __future__ import annotations

import copy
import json

import pytest

from pipelines.cli import main as newsroom
from schemas.pages import page_path
from stores import open_stores
from transforms.editions.beam.publishing import PublishSnapshotFn
from transforms.editions.vocabulary.documents import iso


def store_flags(config) -> list[str]:
    flags = ["--backend", config.backend, "--data_dir", config.data_dir, "--namespace", config.namespace]
    if config.backend == "gcp":
        flags += ["--bigtable_instance", config.bigtable_instance, "--snapshot_bucket", config.bucket]
        if config.project:
            flags += ["--project", config.project]
    return flags


@pytest.fixture
def published(store_config, world, make_ranker):
    """Three versions of us-en/top and of the us-en pool, each different, published through PublishSnapshotFn."""
    T, MIN = world.T0, world.MIN
    for s in range(12):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN)
    out = make_ranker(world).cycle(T)
    fn = PublishSnapshotFn(store_config)
    fn.setup()
    versions = []
    for k in range(3):
        v = out.pages["top"]["version"] + k
        page = copy.deepcopy(out.pages["top"])
        page["version"], page["cycle"], page["generated_at"] = v, iso(v * MIN), iso(v * MIN)
        page["stories"] = page["stories"][k:] + page["stories"][:k]  # a different order each time
        for i, s in enumerate(page["stories"], start=1):
            s["rank"] = i
        pool = dict(out.pool, version=v, cycle=iso(v * MIN), stories=out.pool["stories"][k:])
        for kind, pointer, doc in (("edition_page", "us-en/top", page), ("candidate_pool", "pool/us-en", pool)):
            item = {"kind": kind, "pointer": pointer, "version": v, "doc": doc, "min_stories": 1, "path": ""}
            assert list(fn.process(item))[0]["outcome"] == "published"
        versions.append(v)
    return store_config, versions


def test_rollback_to_the_previous_and_to_a_named_version(published, capsys):
    config, (v1, v2, v3) = published
    stores = open_stores(config)
    assert stores.pointers.get("us-en/top") == v3
    flags = [*store_flags(config), "--reason", "bad ranking"]
    assert newsroom(["rollback", "--edition", "us-en", "--section", "top", *flags]) == 0
    assert stores.pointers.get("us-en/top") == v2
    assert f"us-en/top: v{v3} -> v{v2}" in capsys.readouterr().out
    assert newsroom(["rollback", "--edition", "us-en", "--section", "top", "--to-version", str(v1), *flags]) == 0
    assert stores.pointers.get("us-en/top") == v1
    served = json.loads(stores.snapshots.get(page_path("us-en", "top", stores.pointers.get("us-en/top"))))
    assert served["version"] == v1
    assert [h["reason"] for h in stores.pointers.history("us-en/top")][-2:] == ["rollback", "rollback"]
    assert newsroom(["rollback", "--edition", "us-en", "--pool", *flags]) == 0
    assert stores.pointers.get("pool/us-en") == v2
    assert newsroom(["rollback", "--edition", "us-en", "--section", "top", "--list", *flags]) == 0
    assert f"v{v1}" in capsys.readouterr().out


def test_rollback_refuses_what_cannot_be_served(published, capsys):
    config, (v1, v2, v3) = published
    stores = open_stores(config)
    flags = [*store_flags(config), "--reason", "bad ranking"]
    assert newsroom(["rollback", "--edition", "us-en", "--section", "top", "--to-version", str(v3 + 7), *flags]) == 1
    assert newsroom(["rollback", "--edition", "us-en", "--section", "health", *flags]) == 1  # nothing published
    assert newsroom(["rollback", "--edition", "xx-yy", "--section", "top", *flags]) == 2
    assert newsroom(["rollback", "--edition", "us-en", "--section", "gardening", *flags]) == 2
    assert stores.pointers.get("us-en/top") == v3  # nothing moved
    err = capsys.readouterr().err
    assert "does not exist" in err and "--edition" in err and "--section" in err
