"""How tests/transforms/data/beam_state_55daf5d.json was made: run from the root of a checkout of 55daf5d (the last
build before the modules moved into rooms), ``python tests/transforms/data/make_beam_state_55daf5d.py OUT.json``.
It imports that build's test helpers, so it runs there, not here: kept as the record of what the fixture holds.

One value per stateful DoFn whose state keeps a product class, encoded by Beam's PickleCoder (the state specs'
coder)."""

import base64
import json
import sys

from apache_beam.coders import PickleCoder

sys.path.insert(0, ".")
from tests.transforms.editions.conftest import Ranker, World  # noqa: E402
from tests.transforms.editions.test_breaking import _page, candidates  # noqa: E402
from tests.transforms.editions.test_burst_pull import memory_and_pulse, scenario  # noqa: E402
from tests.transforms.stories.test_storyline import _mission  # noqa: E402
from transforms.editions.breaking import Ledger  # noqa: E402
from transforms.stories import storyline as sl  # noqa: E402

w = World()
w.randomise(7, 40, World.T0 - 3 * World.HOUR, World.T0)
r = Ranker(w)
out = None
t = max(c["at"] for c in w.changes)
for now in range(t - 9 * 60_000, t + 60_000, 60_000):
    out = r.cycle((now // 60_000 + 1) * 60_000) or out
assert r.memory.prev_pages and r.memory.coverage_versions
led = Ledger()
led.see("us-en", candidates(_page(), {"outcome": "published"})[0][1], clock=lambda: 1.5)
memory, _ = memory_and_pulse(scenario())
f, _, _ = _mission()
_, writer = sl.storyline_changes([sl.compact(o) for o in f.outs])
values = {
    "RankEditionsFn.MEMORY": r.memory,
    "AnnounceBreakingFn.LEDGER": led,
    "RequestPollsFn.MEMORY": (memory, {7: 123}),
    "StorylinesFn.WRITER": writer,
}
coder = PickleCoder()
doc = {k: base64.b64encode(coder.encode(v)).decode() for k, v in values.items()}
json.dump(doc, open(sys.argv[1], "w"), indent=1)
for k, v in doc.items():
    print(k, len(v))
