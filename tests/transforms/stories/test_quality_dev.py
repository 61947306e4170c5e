"""Story quality in CI: the writer, with the shipped configuration, on the labelled dev files, scored out of
sample, must meet the dev bars.

For each dev file of ../shared/data/stories: a part of it that keeps what makes it hard (benchmarks/stories_lofo.py
``subset``: gva's densest days, ECB+'s topics whole, a run of AllSides' neighbouring items, a sample of every UCI
story; BASIL and MEANTIME whole), embedded with the default embedders (no cache: a clean clone computes them), then
the learned pair score fitted and its bars chosen on the *other* files' parts (leave-one-file-out), the writer run
with the shipped ClusterConfig and that pair score, and the file's pairwise precision and B-cubed F1 checked against
its bars (stories_lofo.PRECISION_BAR / B3_BAR; KNOWN_BELOW where the writer does not meet one yet). Skipped only when ../shared/data is absent (it is not part of the
project). About two minutes on an idle 2-core machine, most of it the encoders (NEWSROOM_STORIES_CACHE keeps
the vectors between runs).

benchmarks/stories_calibrate.py prints the same leave-one-file-out figures on the whole files.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = next(
    (p / "shared" / "data" / "stories" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared" / "data").is_dir()),
    ROOT.parent / "shared" / "data" / "stories",
)
# CI computes the vectors (a clean clone has no cache); a developer may keep them: NEWSROOM_STORIES_CACHE
CACHE = os.environ.get("NEWSROOM_STORIES_CACHE") or None
# Where the shipped writer is still below a dev bar on these parts, its measured figure less 0.02 guards against a
# regression instead (docs/stories.md, "Out of sample"): raise these as the writer improves, drop them when it meets the
# bar. gva: events of one kind on one day still chain (pairwise P); ECB+ and AllSides: recall; UCI: a sample of every
# 10th headline cannot reach the whole file's B-cubed recall.
KNOWN_BELOW = {
    # 0.770 with local places (streets) in the places relation (0.752 before them, 0.436 before the second opinion)
    ("gva-dev.jsonl", "pair_precision"): 0.75,
    ("ecbplus-dev.jsonl", "b3_f1"): 0.75,  # 0.756 with the untimed relief under complete linkage (0.736 before)
    ("uci-dev.jsonl", "b3_f1"): 0.64,
}
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data absent (labelled data, not in the project)")


@pytest.mark.timeout(900)  # ~2 minutes on an idle 2-core machine; a loaded one is slower
def test_the_writer_meets_the_dev_bars_out_of_sample(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import stories_calibrate as calibrate
    import stories_lofo as lofo

    from transforms.stories.embed import embed as embmod
    from transforms.stories.writer.cluster import calibration

    files = sorted(DATA.glob("*-dev.jsonl"))
    assert files, f"no dev files in {DATA}"
    routing = embmod.EmbedderRouting("auto")
    data, links = {}, {}
    for path in files:
        recs = lofo.subset([json.loads(line) for line in open(path, encoding="utf-8") if line.strip()])
        links[path.name] = len({r.get("language") for r in recs}) > 1  # link vectors only where languages meet
        data[path.name] = calibrate.load_records(path.name, recs, routing, CACHE, links[path.name])
    rows = {n: lofo.pair_rows(f, g) for n, (f, g, _) in data.items()}
    figures, below = {}, []
    for name, (feats, gold, lang) in sorted(data.items()):
        model = lofo.fold_model(data, rows, name)
        assert name not in model.meta["trained_on"] + model.meta["bars_chosen_on"]
        path = lofo.write_model(model, str(tmp_path / f"without-{name}.json"))
        config = dataclasses.replace(calibration(feats[0].model, feats[0].language), pair_score=path)
        s = calibrate.evaluate(feats, gold, lang, config, links[name])
        figures[name] = f"P {s['pair_precision']:.3f} B3F1 {s['b3_f1']:.3f} ({s['articles']} articles)"
        for metric, bar in (("pair_precision", lofo.precision_bar(name)), ("b3_f1", lofo.B3_BAR.get(name, 0.0))):
            floor = KNOWN_BELOW.get((name, metric), bar)
            if s[metric] < floor:
                below.append(f"{name} {metric} {s[metric]:.3f} < {floor}")
    print(json.dumps(figures, indent=1))
    assert not below, f"below the dev bars (or, where the writer is known to be below them, its figure): {below}"
