"""The editions stage's graph lets FnApiRunner stream the ranker's pages into the publisher.

FnApiRunner materialises every multi-input Flatten (fn_api_runner/translations.py sink_flattens): with the pages
and the aliases flattened before one publisher, a backfill's ``--snapshots`` held every page document of the whole
replay in memory before the first was published (7.3 GB RSS at 3,811 articles over 30 simulated days). Built, not
run: the graph proto only.
"""

from __future__ import annotations

import apache_beam as beam

from stores import StoreConfig
from transforms.editions.beam import PublishEditions
from transforms.editions.vocabulary.settings import RankSettings


def _producers_of_publish_inputs(tmp_path) -> dict[str, set[str]]:
    p = beam.Pipeline()
    changes = p | beam.Create([])
    _ = changes | PublishEditions(StoreConfig(data_dir=str(tmp_path)), RankSettings(editions_only=["us-en"]))
    proto = p.to_runner_api()
    leaves = {tid: t for tid, t in proto.components.transforms.items() if not t.subtransforms}
    producer = {pc: t for t in leaves.values() for pc in t.outputs.values()}
    out = {}
    for t in leaves.values():
        if "/ValidateStoreAndPoint/" in t.unique_name:
            out[t.unique_name] = {producer[pc].spec.urn for pc in t.inputs.values()}
    return out


def test_no_flatten_between_the_ranker_or_the_aliases_and_their_publisher(tmp_path):
    inputs = _producers_of_publish_inputs(tmp_path)
    assert len(inputs) == 2, inputs  # the pages' publisher and the aliases' publisher
    for name, urns in inputs.items():
        assert urns and not any(u.endswith(":flatten:v1") for u in urns), (name, urns)
