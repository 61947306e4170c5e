"""Train the learned article-pair score (transforms/stories/writer/pairscore.py) on the labelled dev files only.

    .venv/bin/python benchmarks/stories_pair_score.py [--data ../shared/data/stories] [--cache DIR] [--check]

Every within-language article pair of each dev file is a training row (label: same gold story); each file weighs
the same in the fit, and inside a file the positive and the negative pairs weigh half each, so neither the largest
file (uci-dev, 4.5 M pairs) nor the class balance of one file decides the weights (a file without any positive
within-language pair, meantime-dev, only calibrates the bars; negative pairs are subsampled per file). Then:

- leave-one-dev-file-out: the model fitted on the other files scores the held-out file's pairs (ROC AUC, and the
  average precision of its ranking), recorded in the JSON: a feature that only identifies a data set fails here;
  the clustering figures of the same folds are benchmarks/stories_calibrate.py's headline (benchmarks/stories_lofo.py);
- the average-linkage bar per text kind (body / headline): the bar of the offline reference
  (benchmarks/stories_reference.py) with the largest mean B-cubed F1 over the files of that kind while every file's
  pairwise precision bar is met (benchmarks/stories_lofo.py: 0.95; uci-dev 0.90, allsides-dev 0.80).

Writes transforms/stories/writer/pair_score.json (package data) with the features, weights, bars, the sha256 of the
training files and the held-out scores; ``--check`` only prints what it would write. Embeddings are cached as in
benchmarks/stories_calibrate.py.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import stories_lofo as lofo  # noqa: E402
from stories_calibrate import DEFAULT_CACHE, DEFAULT_DATA, load  # noqa: E402

from transforms.stories.embed import embed as embmod  # noqa: E402
from transforms.stories.writer import pairscore  # noqa: E402


def auc_ap(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """ROC AUC (rank statistic, ties averaged) and average precision of scores ``s`` for labels ``y``."""
    order = np.argsort(s, kind="stable")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    _, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    ranks = (sums / counts)[inv]
    pos = y > 0
    npos, nneg = int(pos.sum()), int((~pos).sum())
    auc = (ranks[pos].sum() - npos * (npos + 1) / 2) / max(npos * nneg, 1)
    desc = np.argsort(-s, kind="stable")
    hits = np.cumsum(pos[desc])
    ap = float(np.sum((hits / np.arange(1, len(s) + 1))[pos[desc]]) / max(npos, 1))
    return float(auc), ap


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    ap.add_argument("--out", default=pairscore.MODEL_PATH)
    ap.add_argument("--check", action="store_true", help="print the model, do not write it")
    args = ap.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.data, "*-dev.jsonl")))
    if not files:
        print(f"no dev files in {args.data}", file=sys.stderr)
        return 2
    routing = embmod.EmbedderRouting("auto")
    data = {os.path.basename(f): load(f, routing, args.cache, True) for f in files}
    rows = {name: lofo.pair_rows(feats, gold) for name, (feats, gold, _) in data.items()}
    # a file whose languages hold one article per story (meantime-dev: one report and its translations) has no
    # positive within-language pair: it cannot teach the score, only tip its bias; it still calibrates the bars
    held_out = {}
    for n in lofo.teaching(rows, rows):
        beta = lofo.fit(rows, [m for m in rows if m != n])
        auc, avp = auc_ap(rows[n][1] @ beta[1:] + beta[0], rows[n][2])
        held_out[n] = {"auc": round(auc, 4), "average_precision": round(avp, 4)}
    digest = hashlib.sha256()
    for f in files:
        digest.update(os.path.basename(f).encode() + b"\0" + Path(f).read_bytes())
    meta = {
        "training_sha256": digest.hexdigest(),
        "embedders": sorted({f.model for feats, _, _ in data.values() for f in feats}),
        "leave_one_file_out": held_out,
    }
    model = lofo.fold_model(data, rows, None, meta)
    text = json.dumps(model.to_dict(), indent=2, sort_keys=True) + "\n"
    print(text)
    if not args.check:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
