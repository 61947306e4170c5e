"""RankEditionsFn in replay mode driven by hand over a test world (the fakes stand in for Beam's state and timer), each
firing's items published into the store under ``root``: what the steady-minute and skipped-minute tests compare."""

from __future__ import annotations

import os

from apache_beam.utils.timestamp import Timestamp

from stores import StoreConfig, open_stores
from stores.controls import open_control_store
from tests.transforms.fakes import Bag, Timer, Value
from transforms.editions.beam.ranking import RankEditionsFn
from transforms.editions.book.storybook import compact_change
from transforms.editions.publish.snapshots import SnapshotPublisher
from transforms.editions.vocabulary.settings import RankSettings


def replay(world, root, change_only: bool, controls: bool = False) -> tuple[dict, dict, dict, object]:
    """The us-en replay of ``world.changes``: (stored objects by path, pointer moves by name, the fn's tally, the
    edition memory at the end); ``controls`` gives the publisher the control store under ``root``."""
    config = StoreConfig(data_dir=str(root))
    stores = open_stores(config)
    fn = RankEditionsFn(RankSettings(editions_only=["us-en"], replay=True, change_only=change_only), config)
    fn.setup()
    publisher = (
        SnapshotPublisher(stores, controls=open_control_store(config)) if controls else SnapshotPublisher(stores)
    )
    inbox, log, memory, chain, timer = Bag(), Bag(), Value(), Value(), Timer()
    for c in sorted(world.changes, key=lambda c: c["at"]):
        fn.process(("us-en", compact_change(c)), inbox=inbox, chain=chain, memory=memory, timer=timer)
    while timer.at is not None:  # the replay runs the chain to its end per firing; a gap restarts it
        at, timer.at = timer.at, None
        args = dict(inbox=inbox, event_log=log, memory=memory, chain=chain, timer=timer)
        for item in fn.on_cycle(key="us-en", ts=Timestamp(micros=at * 1000), **args):
            publisher.publish(item)
    objects = {}
    for dirpath, _, files in os.walk(root / "snapshots"):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                objects[os.path.relpath(os.path.join(dirpath, name), root)] = f.read()
    names = stores.pointers.names()
    moves = {n: [(h["version"], h["previous"], h["reason"]) for h in stores.pointers.history(n)] for n in names}
    return objects, moves, dict(fn.tally), memory.read()
