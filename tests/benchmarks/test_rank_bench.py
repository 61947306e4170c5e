"""benchmarks/rank_bench.py's synthetic book folds later articles as a folded book would: its loop-versus-vectorised
check printed NO because the loaded book had no (story, publisher) index, so an article of a publisher the story
already had appended a second pair row and that voice counted twice in the vectorised coverage (not in the loop's)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import rank_compare
from benchmarks.rank_bench import NOW, load_book, make_registry, next_minute_events
from transforms.common import MINUTE_MS
from transforms.editions.vocabulary.config import load_config


def test_folding_the_next_minute_into_the_loaded_book_adds_no_second_pair_or_mention_row():
    config, rng = load_config(), np.random.default_rng(5)
    registry = make_registry(config, rng)
    book = load_book(config, registry, "de", 400, rng, 8, 1 << 20)
    events = next_minute_events({"de": book}, registry, rng, 300)["de"]
    assert len(events) >= 100
    for e in events:
        book.apply(e)
    book.flush()
    ns, nm = book.pairs.size, book.mentions.size
    pairs = set(zip(book.pairs.story[:ns].tolist(), book.pairs.publisher[:ns].tolist()))
    assert len(pairs) == ns
    assert len(set(zip(book.mentions.story[:nm].tolist(), book.mentions.region[:nm].tolist()))) == nm


def test_each_minute_of_the_harness_folds_new_articles():
    """rank_compare's steady cycles fold minute after minute: each call must bring that minute's own articles (new
    ids, change ids and times within it). Every call once made the same events, so from the second minute on the
    book took them as repeats, no story changed and the "steady" cycles ranked a minute with no news."""
    config, rng = load_config(), np.random.default_rng(5)
    registry = make_registry(config, rng)
    book = load_book(config, registry, "de", 400, rng, 8, 1 << 20)
    seen = set()
    for minute in (1, 2, 3):
        before = book.articles.size, book.stories.version[: book.stories.size].copy()
        events = next_minute_events({"de": book}, registry, rng, 300, minute=minute)["de"]
        for e in events:
            book.apply(e)
        book.flush()
        ids = {e["article_id"] for e in events}
        assert not ids & seen
        seen |= ids
        assert book.articles.size == before[0] + len(events)
        assert (book.stories.version[: len(before[1])] != before[1]).any()
        # the minute before the cycle at NOW + minute
        assert {e["at"] // MINUTE_MS for e in events} == {NOW // MINUTE_MS + minute - 1}


@pytest.mark.parametrize("level", ["x86-64-v3", "x86-64-v2"])
def test_rank_compare_s_kernel_levels_really_pin_numpy_and_openblas(level):
    """rank_compare --kernels measures a lower x86-64 level by environment variables alone; a name numpy or OpenBLAS
    did not know would measure this CPU's kernels under that level's label. On an x86 CPU that has the level's
    features, numpy's dispatch targets above the level read off and OpenBLAS reports the named core."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 levels are an x86 CPU's")
    env = {**os.environ, **rank_compare.KERNELS[level]}
    probe = (
        "import json, numpy; from numpy._core._multiarray_umath import __cpu_features__ as f;"
        "from threadpoolctl import threadpool_info;"
        "print(json.dumps([f, [i.get('architecture') for i in threadpool_info() if i.get('internal_api') == 'openblas']]))"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    features, cores = json.loads(out.stdout)
    for name in rank_compare.KERNELS[level]["NPY_DISABLE_CPU_FEATURES"].split():
        assert features.get(name) is False, (name, features.get(name))
    assert cores == [rank_compare.KERNELS[level]["OPENBLAS_CORETYPE"]]


def test_rank_compare_s_skip_ranks_the_world_of_the_later_minute_in_a_young_process():
    """--skip K must fold exactly the harness's first K minutes before its cold cycle: its first steady cycle ranks
    the world that a run without --skip ranks at minute K + 1 (the same articles), or a young process and an old one
    would be compared on different worlds and the process's age would be blamed for the world's growth."""
    script = rank_compare.__file__

    def rows(*extra):
        out = subprocess.run(
            [sys.executable, script, "--kernels", "native", "--head", ".", "--stories", "3000", *extra],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [line for line in out.splitlines() if line.startswith("native cycle")]

    old, young = rows("--repeat", "3"), rows("--repeat", "1", "--skip", "2")
    assert [r.split(":")[0] for r in old] == ["native cycle 2", "native cycle 3", "native cycle 4"]
    assert [r.split(":")[0] for r in young] == ["native cycle 4"]
    articles = [r.split(", ")[1] for r in old]
    assert len(set(articles)) == 3  # each minute adds its own articles
    assert young[0].split(", ")[1] == articles[2]
