"""Google Cloud backend specifics that the shared contract cannot reach: error mapping with stubs (the GCS
emulator ignores preconditions and the emulators grant everything, so the 412 and 403 paths are only testable this
way), batching of publish_many, provisioning with the layout's GC rules, namespaces."""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
import warnings

import pytest
from google.api_core import exceptions as gx
from google.cloud.bigtable import column_family

from devtools import emulators
from schemas.tables import MAX_AGE_DAYS, TABLES, TOPICS
from stores import AlreadyExists, NotFound, StoreError, gcp, open_store, open_stores
from stores.gcp.clients import bigtable_table


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
    assert gcp.bigtable._prefix_end(b"l#en#") == b"l#en$"
    assert gcp.bigtable._prefix_end(b"a\xff") == b"b"
    assert gcp.bigtable._prefix_end(b"\xff\xff") == b""


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
        table_id = "articles"

        def read_row(self, key, filter_=None):
            raise gx.ServiceUnavailable("connection refused")

    with pytest.raises(StoreError, match="unavailable|connection refused"):
        gcp.BigtableArticleStore(Broken()).get("x")


# ------------------------------------------------------------------------------ least privilege on Pub/Sub (403)

DENIED = gx.PermissionDenied("User not authorized to perform this action.")


class StubPubSub:
    """Publisher and subscriber of an account with the given rights. ``topics`` / ``subs``: names that exist;
    ``can_get`` / ``can_create``: what the account may do (False: PermissionDenied, as Pub/Sub answers 403)."""

    def __init__(self, topics=(), subs=(), can_get=True, can_create=True):
        self.topics, self.subs = set(topics), set(subs)
        self.can_get, self.can_create = can_get, can_create
        self.calls: list[tuple[str, str]] = []

    def topic_path(self, project, name):
        return f"projects/{project}/topics/{name}"

    def subscription_path(self, project, name):
        return f"projects/{project}/subscriptions/{name}"

    def _get(self, what, name, existing):
        self.calls.append((f"get_{what}", name))
        if not self.can_get:
            raise DENIED
        if name not in existing:
            raise gx.NotFound(f"Resource not found (resource={name}).")
        return {"name": name}

    def _create(self, what, name, existing):
        self.calls.append((f"create_{what}", name))
        if not self.can_create:
            raise DENIED
        if name in existing:
            raise gx.AlreadyExists(f"{what} already exists")
        existing.add(name)

    def get_topic(self, request):
        return self._get("topic", request["topic"], self.topics)

    def create_topic(self, request):
        self._create("topic", request["name"], self.topics)

    def get_subscription(self, request):
        return self._get("subscription", request["subscription"], self.subs)

    def create_subscription(self, request):
        self.last_subscription_request = request
        self._create("subscription", request["name"], self.subs)


def stub_bus(stub):
    return gcp.PubSubBus(publisher=stub, subscriber=stub, project="prod", name=lambda base: base)


T = "projects/prod/topics/items-raw"
S = "projects/prod/subscriptions/items-raw-stories"


@pytest.fixture
def fresh_log(caplog, monkeypatch):
    monkeypatch.setattr(gcp.pubsub, "_ASSUMED", set())  # "log once" is per process: start each test clean
    caplog.set_level(logging.INFO, logger="stores.gcp")
    return caplog


def assumed(caplog):
    return [r for r in caplog.records if "provisioned by Terraform" in r.getMessage()]


def test_existing_topic_is_not_created_again():
    stub = StubPubSub(topics={T}, can_create=False)
    stub_bus(stub).ensure_topic("items-raw")
    assert stub.calls == [("get_topic", T)]


def test_missing_topic_is_created_when_allowed():
    stub = StubPubSub()
    stub_bus(stub).ensure_topic("items-raw")
    assert stub.calls == [("get_topic", T), ("create_topic", T)] and T in stub.topics


def test_publisher_only_account_assumes_terraform_made_the_topic_and_logs_once(fresh_log):
    # roles/pubsub.publisher: may publish, may neither get nor create the topic.
    stub = StubPubSub(topics={T}, can_get=False, can_create=False)
    bus = stub_bus(stub)
    bus.ensure_topic("items-raw")
    bus.ensure_topic("items-raw")  # a second DoFn setup in the same worker
    assert stub.calls == [("get_topic", T), ("create_topic", T)] * 2
    records = assumed(fresh_log)
    assert len(records) == 1 and records[0].levelno == logging.INFO and T in records[0].getMessage()


def test_denied_create_of_a_topic_known_to_be_missing_is_not_found():
    # The account may look and the service says the topic does not exist: nothing will be able to publish.
    stub = StubPubSub(can_get=True, can_create=False)
    with pytest.raises(NotFound, match="items-raw.*Terraform"):
        stub_bus(stub).ensure_topic("items-raw")


def test_existing_subscription_needs_no_rights_on_its_topic():
    # roles/pubsub.subscriber + viewer on the subscription, nothing on the topic (the stories job on items-raw).
    stub = StubPubSub(subs={S}, can_create=False)
    stub_bus(stub).ensure_subscription("items-raw", "items-raw-stories")
    assert stub.calls == [("get_subscription", S)]


def test_subscriber_without_viewer_does_not_crash(fresh_log):
    stub = StubPubSub(topics={T}, subs={S}, can_get=False, can_create=False)
    stub_bus(stub).ensure_subscription("items-raw", "items-raw-stories")
    assert [c[0] for c in stub.calls] == ["get_subscription", "get_topic", "create_topic", "create_subscription"]
    assert sorted(r.getMessage().split()[1].rstrip(":") for r in assumed(fresh_log)) == [S, T]


def test_missing_subscription_is_created_on_its_topic_with_a_clamped_deadline():
    stub = StubPubSub(topics={T})
    stub_bus(stub).ensure_subscription("items-raw", "items-raw-stories", ack_deadline_s=5000)
    assert stub.calls == [("get_subscription", S), ("get_topic", T), ("create_subscription", S)]
    assert stub.last_subscription_request == {"name": S, "topic": T, "ack_deadline_seconds": 600}


def test_denied_create_of_a_subscription_known_to_be_missing_is_not_found():
    stub = StubPubSub(topics={T}, can_create=False)
    with pytest.raises(NotFound, match="items-raw-stories"):
        stub_bus(stub).ensure_subscription("items-raw", "items-raw-stories")


def test_unavailable_pubsub_during_ensure_is_a_store_error():
    class Down(StubPubSub):
        def get_topic(self, request):
            raise gx.ServiceUnavailable("connection refused")

    with pytest.raises(StoreError) as info:
        stub_bus(Down()).ensure_topic("items-raw")
    assert not isinstance(info.value, NotFound)


# -------------------------------------------------------------------------------------- publish_many batching


class StubFuture:
    def __init__(self, log, i, outcome):
        self.log, self.i, self.outcome = log, i, outcome

    def result(self, timeout=None):
        self.log.append(("result", self.i, timeout))
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class StubPublisher:
    def __init__(self, outcomes):
        self.outcomes = outcomes
        self.log: list = []

    def topic_path(self, project, name):
        return f"projects/{project}/topics/{name}"

    def publish(self, topic, data, **attrs):
        i = len([e for e in self.log if e[0] == "publish"])
        self.log.append(("publish", i, (topic, data, attrs)))
        return StubFuture(self.log, i, self.outcomes[i])


def test_publish_many_hands_over_everything_before_waiting():
    pub = StubPublisher(["m0", "m1", "m2"])
    bus = gcp.PubSubBus(publisher=pub, subscriber=None, project="p")
    ids = bus.publish_many("articles", [(b"a", {"n": 0}), (bytearray(b"b"), {}), (b"c", None)])
    assert ids == ["m0", "m1", "m2"]
    assert [e[0] for e in pub.log] == ["publish"] * 3 + ["result"] * 3  # the client may batch all three
    assert pub.log[0][2] == ("projects/p/topics/articles", b"a", {"n": "0"})  # attributes travel as strings
    assert pub.log[1][2][1] == b"b" and type(pub.log[1][2][1]) is bytes


def test_publish_many_waits_on_all_then_reports_the_failure():
    pub = StubPublisher(["m0", gx.ServiceUnavailable("backend"), "m2"])
    bus = gcp.PubSubBus(publisher=pub, subscriber=None, project="p")
    with pytest.raises(StoreError, match="1 of 3 messages failed") as info:
        bus.publish_many("articles", [(b"a", {}), (b"b", {}), (b"c", {})])
    assert not isinstance(info.value, NotFound)
    assert [e[1] for e in pub.log if e[0] == "result"] == [0, 1, 2]  # every future was awaited


def test_publish_many_to_a_missing_topic_is_not_found():
    pub = StubPublisher([gx.NotFound("Topic not found")] * 2)
    bus = gcp.PubSubBus(publisher=pub, subscriber=None, project="p")
    with pytest.raises(NotFound, match="articles"):
        bus.publish_many("articles", [(b"a", {}), (b"b", {})])


def test_publish_many_waits_at_most_the_timeout_without_progress(monkeypatch):
    monkeypatch.setattr(gcp.pubsub, "PUBLISH_TIMEOUT_S", 7.0)
    pub = StubPublisher(["m0", TimeoutError(), "m2", TimeoutError()])
    bus = gcp.PubSubBus(publisher=pub, subscriber=None, project="p")
    with pytest.raises(StoreError, match="2 of 4"):
        bus.publish_many("articles", [(b"x", {})] * 4)
    # after the first time-out the remaining futures are only checked, not waited on for another 7 s each
    assert [e[2] for e in pub.log if e[0] == "result"] == [7.0, 7.0, 0.0, 0.0]


# ------------------------------------------------------------------------------------------- on the emulators


@pytest.mark.emulator
def test_provision_is_idempotent_and_follows_the_layout(gcp_store_config):
    emulators.provision(gcp_store_config)  # second time: nothing to do, no error
    admin = gcp.client("bigtable-admin", gcp_store_config.gcp_project).instance(gcp_store_config.bigtable_instance)
    for base, families in TABLES.items():
        table = admin.table(gcp_store_config.name(base))
        assert table.exists(), base
        got = table.list_column_families()
        assert set(got) == set(families), base
        for fam, n in families.items():
            if fam in MAX_AGE_DAYS.get(base, {}):
                continue
            assert got[fam].gc_rule.max_num_versions == n, (base, fam)
    reads = admin.table(gcp_store_config.name("profiles")).list_column_families()["e"].gc_rule
    assert isinstance(reads, column_family.GCRuleUnion)  # either rule deletes: old versions or old cells
    assert reads.rules == [column_family.MaxVersionsGCRule(1), column_family.MaxAgeGCRule(datetime.timedelta(days=30))]
    bus = open_store("bus", gcp_store_config)
    for topic in TOPICS:  # topics exist: publishing needs no ensure_topic
        assert bus.publish(topic, b"x")


@pytest.mark.emulator
def test_provision_brings_existing_families_to_the_layouts_gc_rules(emulator_stack, tmp_path):
    # A profiles table made before the age rule existed (or by hand) gets it, and a missing family is added.
    config = emulators.stack_config(
        emulator_stack, namespace=f"gc{time.monotonic_ns() % 10**9}", data_dir=str(tmp_path)
    )
    admin = gcp.client("bigtable-admin", config.gcp_project).instance(config.bigtable_instance)
    old = admin.table(config.name("profiles"))
    old.create(column_families={"e": column_family.MaxVersionsGCRule(3)})
    emulators.provision(config)
    got = old.list_column_families()
    assert set(got) == {"p", "e"}
    assert got["e"].gc_rule == gcp.gc_rule("profiles", "e")
    assert got["e"].gc_rule != column_family.MaxVersionsGCRule(3)
    assert got["p"].gc_rule == column_family.MaxVersionsGCRule(1)


class CountingTable:
    """A raw Bigtable table handle that records the reads a store sends through it."""

    def __init__(self, inner):
        self.inner = inner
        self.table_id = inner.table_id
        self.reads: list = []

    def read_row(self, key, filter_=None):
        self.reads.append(("row", key, filter_))
        return self.inner.read_row(key, filter_=filter_)

    def read_rows(self, start_key=None, end_key=None, filter_=None, **kwargs):
        self.reads.append(("scan", start_key, filter_))
        return self.inner.read_rows(start_key=start_key, end_key=end_key, filter_=filter_, **kwargs)

    def __getattr__(self, name):  # writes go to the handle unrecorded
        return getattr(self.inner, name)


@pytest.mark.emulator
def test_pointer_versions_is_one_scan_of_the_latest_version_cells(gcp_store_config):
    counting = CountingTable(bigtable_table(gcp_store_config, "pointers"))
    pointers = gcp.BigtablePointerStore(counting)
    for i in range(40):
        assert pointers.compare_and_set(f"story/{i}", None, 1)
        assert pointers.compare_and_set(f"story/{i}", 1, 2)  # the emulator keeps both cells and a history
    counting.reads.clear()
    assert pointers.versions("story/") == {f"story/{i}": 2 for i in range(40)}
    assert counting.reads == [("scan", b"p#story/", gcp.latest_cell_filter("p", b"version"))]


@pytest.mark.emulator
def test_ensure_on_the_emulator_creates_once_and_then_only_looks(gcp_store_config):
    bus = open_store("bus", gcp_store_config)
    created = []
    real_create = bus.publisher.create_topic

    def spy(request):
        created.append(request["name"])
        return real_create(request=request)

    bus.publisher = _Proxy(bus.publisher, create_topic=spy)
    bus.ensure_topic("lp-topic")
    bus.ensure_topic("lp-topic")
    bus.ensure_subscription("lp-topic", "lp-sub")
    bus.ensure_subscription("lp-topic", "lp-sub")
    assert created == [bus.topic_path("lp-topic")]
    assert bus.publish("lp-topic", b"x") and [m.data for m in bus.pull("lp-sub", timeout=5)] == [b"x"]


class _Proxy:
    def __init__(self, inner, **overrides):
        self._inner, self._overrides = inner, overrides

    def __getattr__(self, name):
        return self._overrides.get(name) or getattr(self._inner, name)


@pytest.mark.emulator
def test_namespaces_are_isolated(gcp_store_config, sample_record):
    other = dataclasses.replace(gcp_store_config, namespace=gcp_store_config.namespace + "-b")
    emulators.provision(other)
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
        client = gcp.clients._make_client("bigtable", emulator_stack.project)
    assert client.project == emulator_stack.project


@pytest.mark.emulator
def test_store_errors_when_the_emulator_is_unreachable(monkeypatch, gcp_store_config):
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{emulators.free_port()}")  # nothing listens there
    bus = open_store("bus", gcp_store_config)
    monkeypatch.setattr(gcp.pubsub, "PUBLISH_TIMEOUT_S", 2.0)
    with pytest.raises(StoreError):
        bus.publish("articles", b"x")
