"""stores.beam_io.PublishToBusFn: the one bus-publishing DoFn (ingest raw items and dead letters, stories' fetch
requests and dead letters). Every record of a bundle is out before finish_bundle returns; batches go through the
bus's publish_many, a bus without one gets a publish per record; the ordering key travels as an attribute."""

from __future__ import annotations

from schemas import codec
from stores import StoreConfig, open_store
from stores.beam_io import PublishToBusFn


def _dead(i: int) -> dict:
    return {"schema_version": 1, "stage": "t", "reason": "r", "detail": "", "key": f"k{i}", "payload": b"", "at": i}


def _fn(tmp_path, **kw) -> tuple[PublishToBusFn, object]:
    config = StoreConfig(backend="embedded", data_dir=str(tmp_path))
    bus = open_store("bus", config)
    bus.ensure_subscription("dead-letter-ingest", "sub")
    fn = PublishToBusFn(config, "dead-letter-ingest", **kw)
    fn.setup()
    return fn, bus


def test_a_bundle_is_published_in_batches_before_it_commits(tmp_path):
    fn, bus = _fn(tmp_path, max_records=2, ordering_key=lambda r: r["key"])
    assert fn.message == "DeadLetter"  # the topic's message type, as publish_record picks it
    calls = []
    real = fn.bus.publish_many
    fn.bus.publish_many = lambda topic, items: calls.append(len(items)) or real(topic, items)
    fn.start_bundle()
    for i in range(5):
        assert list(fn.process(_dead(i)) or []) == []
    assert calls == [2, 2]  # flushed early at max_records
    fn.finish_bundle()
    assert calls == [2, 2, 1]
    msgs = bus.pull("sub", max_messages=10, timeout=1.0)
    assert [codec.decode("DeadLetter", m.data)["key"] for m in msgs] == [f"k{i}" for i in range(5)]
    assert [m.attributes["ordering_key"] for m in msgs] == [f"k{i}" for i in range(5)]


class _PlainBus:
    """A bus with publish only (no publish_many)."""

    def __init__(self):
        self.sent = []

    def ensure_topic(self, topic):
        pass

    def publish(self, topic, data, attributes=None, ordering_key=None):
        self.sent.append((topic, data, attributes, ordering_key))
        return str(len(self.sent))


def test_a_bus_without_publish_many_gets_one_publish_per_record_at_the_flush(tmp_path):
    fn, _ = _fn(tmp_path, ordering_key=lambda r: r["key"] if r["at"] else None)
    fn.bus = _PlainBus()
    fn.start_bundle()
    fn.process(_dead(0))
    fn.process(_dead(1))
    assert fn.bus.sent == []  # held until the bundle finishes
    fn.finish_bundle()
    assert [(t, k) for t, _, _, k in fn.bus.sent] == [("dead-letter-ingest", None), ("dead-letter-ingest", "k1")]
    assert codec.decode("DeadLetter", fn.bus.sent[1][1])["key"] == "k1"


def test_decode_bus_fn_decodes_drops_heartbeats_and_dead_letters_the_rest(sample_record):
    import functools

    import apache_beam as beam

    from schemas import codec
    from stores.beam_io import HEARTBEAT_ATTRIBUTE, DecodeBusFn
    from transforms.common import DEAD_LETTER, dead_letter

    fn = DecodeBusFn(
        "RawItem",
        "stories",
        "raw_items",
        functools.partial(dead_letter, "stories", "undecodable"),
        DEAD_LETTER,
        clock=lambda: 7,
    )
    item = sample_record("RawItem")
    assert list(fn.process((codec.encode("RawItem", item), {}))) == [
        codec.decode("RawItem", codec.encode("RawItem", item))
    ]
    assert list(fn.process((b"", {HEARTBEAT_ATTRIBUTE: "1"}))) == []
    (bad,) = fn.process((b"\xff\x00 not avro", {}))
    assert isinstance(bad, beam.pvalue.TaggedOutput) and bad.tag == DEAD_LETTER
    assert bad.value["stage"] == "stories" and bad.value["reason"] == "undecodable" and bad.value["at"] == 7
    assert bad.value["payload"] == b"\xff\x00 not avro"


def test_result_files_on_a_beam_filesystem_hold_the_bytes_written_locally(tmp_path, monkeypatch):
    """write_text / write_lines to a ``scheme://`` path (gs:// on Dataflow) write what they write to a local file."""
    import io

    from stores import beam_io

    remote: dict[str, io.BytesIO] = {}

    class Kept(io.BytesIO):
        def close(self):
            remote[self.name] = self.getvalue()
            super().close()

    def create(path, mime_type=None):
        f = Kept()
        f.name = path
        return f

    monkeypatch.setattr(beam_io.FileSystems, "create", staticmethod(create))
    rows = [{"b": 1, "a": "é"}, {"z": [1, 2]}]
    assert beam_io.write_lines(iter(rows), "gs://bucket/o/a.jsonl") == 2
    assert beam_io.write_lines(rows, str(tmp_path / "a.jsonl")) == 2
    assert remote["gs://bucket/o/a.jsonl"] == (tmp_path / "a.jsonl").read_bytes()
    beam_io.write_text("gs://bucket/o/s.json", '{"é": 1}\n')
    beam_io.write_text(str(tmp_path / "s.json"), '{"é": 1}\n')
    assert remote["gs://bucket/o/s.json"] == (tmp_path / "s.json").read_bytes()


class _LookingBus(_PlainBus):
    """A Pub/Sub-like bus: topic paths on a publisher client, and ensure_topic (one get_topic call each) counted."""

    def __init__(self, publisher, looked):
        super().__init__()
        self.publisher, self.looked = publisher, looked

    def topic_path(self, topic):
        return f"projects/p/topics/{topic}"

    def ensure_topic(self, topic):
        self.looked.append(topic)


def test_a_topic_is_looked_up_once_per_process_not_once_per_bundle(monkeypatch):
    import pickle

    from stores import beam_io

    looked, publisher = [], object()  # the process-wide client (stores/gcp/clients.py): one for every bus opened
    monkeypatch.setattr(beam_io, "open_store", lambda kind, config: _LookingBus(publisher, looked))
    monkeypatch.setattr(PublishToBusFn, "_ensured", set())
    fn = PublishToBusFn(StoreConfig(), "fetch-requests")
    for _ in range(3):  # the local runner: a pickled copy of the DoFn and its setup() for each bundle
        pickle.loads(pickle.dumps(fn)).setup()
    assert looked == ["fetch-requests"]
    PublishToBusFn(StoreConfig(), "breaking").setup()
    assert looked == ["fetch-requests", "breaking"]
