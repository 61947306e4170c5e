"""Google Cloud backend specifics that the shared contract cannot reach: error mapping with stubs (the GCS
emulator ignores preconditions, so the 412 path is only testable this way), provisioning, namespaces."""

from __future__ import annotations

import dataclasses
import time
import warnings

import pytest
from google.api_core import exceptions as gx

from schemas.tables import TABLES, TOPICS
from stores import AlreadyExists, NotFound, StoreError, open_stores, stack
from stores import gcp


class StubBlob:
    def __init__(self, bucket, name):
        self.bucket, self.name = bucket, name

    def exists(self):
        return self.name in self.bucket.objects

    def upload_from_string(self, data, content_type=None, if_generation_match=None, retry="default"):
        self.bucket.uploads.append((self.name, if_generation_match, retry))
        if self.bucket.upload_error is not None:
            raise self.bucket.upload_error
        self.bucket.objects[self.name] = data

    def download_as_bytes(self):
        if self.name not in self.bucket.objects:
            raise gx.NotFound(f"No such object: {self.name}")
        return self.bucket.objects[self.name]


class StubBucket:
    def __init__(self, upload_error=None):
        self.objects: dict[str, bytes] = {}
        self.uploads: list = []
        self.upload_error = upload_error

    def blob(self, name):
        return StubBlob(self, name)

    def list_blobs(self, prefix=""):
        return [StubBlob(self, n) for n in self.objects if n.startswith(prefix)]


def test_precondition_failed_412_means_already_exists():
    # What real GCS answers when another writer created the object between our existence check and our upload.
    bucket = StubBucket(upload_error=gx.PreconditionFailed("At least one of the pre-conditions did not hold."))
    store = gcp.GcsSnapshotStore(bucket, "ns/")
    with pytest.raises(AlreadyExists, match="pages/en-us/top/v1.json"):
        store.put("pages/en-us/top/v1.json", b"{}")
    assert bucket.uploads == [("ns/pages/en-us/top/v1.json", 0, None)]  # create-only, not retried by the library


def test_existing_object_is_refused_before_upload():
    bucket = StubBucket()
    store = gcp.GcsSnapshotStore(bucket, "")
    store.put("pools/en-us/v1.json", b"a")
    with pytest.raises(AlreadyExists):
        store.put("pools/en-us/v1.json", b"b")
    assert len(bucket.uploads) == 1 and bucket.objects["pools/en-us/v1.json"] == b"a"


def test_transient_upload_error_is_a_store_error_not_already_exists():
    store = gcp.GcsSnapshotStore(StubBucket(upload_error=gx.ServiceUnavailable("backend unavailable")), "")
    with pytest.raises(StoreError) as info:
        store.put("pages/x/y/v1.json", b"{}")
    assert not isinstance(info.value, AlreadyExists)


def test_snapshot_get_missing_and_prefix():
    bucket = StubBucket()
    store = gcp.GcsSnapshotStore(bucket, "bf-2014/")
    with pytest.raises(NotFound):
        store.get("pages/x/y/v1.json")
    store.put("pages/x/y/v1.json", b"1")
    bucket.objects["other/pages/x/y/v1.json"] = b"not ours"
    assert store.list("pages/") == ["pages/x/y/v1.json"]
    assert store.get("pages/x/y/v1.json") == b"1"


@pytest.mark.parametrize("path", ["", "/abs.json", "pages/../../etc", "pages//v1.json", "./v1.json"])
def test_snapshot_paths_must_be_plain(path):
    with pytest.raises(ValueError):
        gcp.GcsSnapshotStore(StubBucket(), "").put(path, b"x")


def test_prefix_end():
    assert gcp._prefix_end(b"l#en#") == b"l#en$"
    assert gcp._prefix_end(b"a\xff") == b"b"
    assert gcp._prefix_end(b"\xff\xff") == b""


class StubSubscriber:
    def __init__(self):
        self.calls = 0

    def subscription_path(self, project, name):
        return f"projects/{project}/subscriptions/{name}"

    def pull(self, request, timeout, retry):
        self.calls += 1
        raise gx.DeadlineExceeded("no messages")


def test_pull_on_empty_subscription_is_bounded_by_timeout():
    sub = StubSubscriber()
    bus = gcp.PubSubBus(publisher=None, subscriber=sub, project="p")
    t = time.monotonic()
    assert bus.pull("s", timeout=0.3) == []
    assert time.monotonic() - t < 2 and sub.calls >= 1


def test_unavailable_bigtable_is_a_store_error():
    class Broken:
        def read_row(self, key, filter_=None):
            raise gx.ServiceUnavailable("connection refused")

    with pytest.raises(StoreError, match="unavailable|connection refused"):
        gcp.BigtableArticleStore(gcp._Table(Broken(), "articles")).get("x")


# ------------------------------------------------------------------------------------------- on the emulators


@pytest.mark.emulator
def test_provision_is_idempotent_and_follows_the_layout(gcp_store_config):
    stack.provision(gcp_store_config)  # second time: nothing to do, no error
    admin = gcp._client("bigtable-admin", gcp_store_config.gcp_project).instance(gcp_store_config.bigtable_instance)
    for base, families in TABLES.items():
        table = admin.table(gcp_store_config.name(base))
        assert table.exists(), base
        got = table.list_column_families()
        assert set(got) == set(families), base
        for fam, n in families.items():
            assert got[fam].gc_rule.max_num_versions == n
    bus = open_stores(gcp_store_config).bus
    for topic in TOPICS:  # topics exist: publishing needs no ensure_topic
        assert bus.publish(topic, b"x")


@pytest.mark.emulator
def test_namespaces_are_isolated(gcp_store_config, sample_record):
    other = dataclasses.replace(gcp_store_config, namespace=gcp_store_config.namespace + "-b")
    stack.provision(other)
    a, b = open_stores(gcp_store_config), open_stores(other)
    a.articles.write(sample_record("Article"))
    a.snapshots.put("pages/en-us/top/v1.json", b"a")
    a.pointers.compare_and_set("en-us/top", None, 1)
    aid = sample_record("Article")["article_id"]
    assert b.articles.get(aid) is None and b.snapshots.list() == [] and b.pointers.get("en-us/top") is None
    b.snapshots.put("pages/en-us/top/v1.json", b"b")  # same path, other namespace: no conflict
    assert a.snapshots.get("pages/en-us/top/v1.json") == b"a"


@pytest.mark.emulator
def test_bigtable_client_creation_is_quiet_under_warnings_as_errors(emulator_stack):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client = gcp._make_client("bigtable", emulator_stack.project)
    assert client.project == emulator_stack.project


@pytest.mark.emulator
def test_store_errors_when_the_emulator_is_unreachable(monkeypatch, gcp_store_config):
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{stack.free_port()}")  # nothing listens there
    bus = open_stores(gcp_store_config).bus
    monkeypatch.setattr(gcp, "PUBLISH_TIMEOUT_S", 2.0)
    with pytest.raises(StoreError):
        bus.publish("articles", b"x")
