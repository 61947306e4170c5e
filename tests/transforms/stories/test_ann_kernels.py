"""The ScaNN kernel choice and the index profile (transforms/stories/index/ann_kernels.py): measured on this CPU,
cached per CPU signature (the profile per kernel set too), pinned by the environment, never made on an index too
small to time."""

from __future__ import annotations

import json
import time

import pytest

from transforms.stories.index import ann_kernels


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv(ann_kernels.CACHE_ENV, str(tmp_path))
    monkeypatch.delenv(ann_kernels.ENV, raising=False)
    monkeypatch.delenv(ann_kernels.PROFILE_ENV, raising=False)
    monkeypatch.setattr(ann_kernels, "CHOICE", None)
    monkeypatch.setattr(ann_kernels, "PROFILE", None)
    yield tmp_path
    ann_kernels.CHOICE = ann_kernels.PROFILE = None
    ann_kernels.apply("baseline")


def _needs_avx2():
    if ann_kernels._switches() is None or not ann_kernels.NEEDS["avx2"] <= ann_kernels.cpu_description()[1]:
        pytest.skip("this CPU or scann wheel has no AVX2 kernels to choose")


def slower_without_avx2(_query):
    """A search that takes three times as long while the AVX2 switch is off."""
    spin = 0.0003 if ann_kernels._switches()["avx2"].value else 0.0009
    end = time.process_time() + spin
    while time.process_time() < end:
        pass


def test_the_faster_kernels_are_chosen_and_the_choice_is_cached_for_this_cpu(fresh):
    _needs_avx2()
    got = ann_kernels.choose(slower_without_avx2, [None] * 8, 250_000)
    assert got["kernels"] in ("avx2", "avx512") and got["reason"] == "calibrated"
    assert ann_kernels._switches()["avx2"].value
    sig = ann_kernels.signature(*ann_kernels.cpu_description())
    cached = json.loads((fresh / "ann_kernels.json").read_text())[sig]
    assert cached["kernels"] == got["kernels"] and cached["us_per_search"]["baseline"] > 600
    ann_kernels.CHOICE = None  # another process on the same CPU: no measurement, the cached choice
    again = ann_kernels.choose(lambda q: pytest.fail("measured again"), [None], 250_000)
    assert again["kernels"] == got["kernels"] and again["reason"] == "cached calibration"


def test_a_small_index_is_not_calibrated_and_a_pin_wins(fresh, monkeypatch):
    small = ann_kernels.choose(lambda q: pytest.fail("timed a small index"), [None], 5_000)
    assert small["kernels"] == "baseline" and not (fresh / "ann_kernels.json").exists()
    monkeypatch.setenv(ann_kernels.ENV, "baseline")
    assert ann_kernels.choose(lambda q: pytest.fail("measured a pinned choice"), [None], 250_000)["reason"] == (
        f"pinned by {ann_kernels.ENV}"
    )
    ann_kernels.CHOICE = None
    monkeypatch.setenv(ann_kernels.ENV, "sse9")
    with pytest.raises(ValueError, match=ann_kernels.ENV):
        ann_kernels.choose(lambda q: None, [None], 250_000)


def test_every_index_is_trained_with_the_kernels_it_searches_with(fresh):
    # A process that knows its choice (here from the cache) trains its first index with it too: the first index
    # used to be trained with the baseline and every later one with the choice, so the same calls gave different
    # partitions, and different decisions, depending on which index the process had built first.
    _needs_avx2()
    from tests.transforms.stories.test_ann import ann, clustered

    sig = ann_kernels.signature(*ann_kernels.cpu_description())
    (fresh / "ann_kernels.json").write_text(json.dumps({sig: {"kernels": "avx2", "method": ann_kernels.METHOD}}))
    ann_kernels.apply("baseline")  # a new process: scann's switches are off
    data, queries = clustered(700, seed=1), clustered(100, seed=2)

    def build_and_search():
        index = ann(leaves_fraction=0.3, pca_dims=8)
        index.bulk_upsert(range(len(data)), data)
        return [index.search(q, 10) for q in queries]

    assert build_and_search() == build_and_search()
    assert ann_kernels.CHOICE["kernels"] == "avx2"


def test_a_choice_measured_one_query_at_a_time_is_measured_again(fresh):
    # Before the writer searched in batches the calibration timed single searches; the cache kept no method then.
    sig = ann_kernels.signature(*ann_kernels.cpu_description())
    (fresh / "ann_kernels.json").write_text(json.dumps({sig: {"kernels": "avx2", "us_per_search": {}}}))
    assert ann_kernels.known() == "baseline" and ann_kernels.CHOICE is None


def figures(fixed_us, us_per_point=0.0, rest_us=0.0):
    return {"fixed_us": fixed_us, "us_per_point": us_per_point, "rest_us": rest_us}


def test_the_most_accurate_profile_predicted_to_reach_the_goal_is_chosen_per_kernel_set(fresh, monkeypatch):
    # A CPU whose default profile is predicted under the goal (here: the SSE4 baseline, 2,000/s predicted, under
    # GOAL x HEADROOM) takes the next profile that reaches it; one whose default reaches it keeps the default
    # without measuring the others. Each choice is cached for its kernel set and read back without measuring.
    monkeypatch.setenv(ann_kernels.ENV, "baseline")
    slow = {"default": figures(500.0), "lean": figures(400.0)}
    measured = []
    ann_kernels.known()  # the index asks for the kernels first
    got = ann_kernels.choose_profile(lambda name: measured.append(name) or slow[name], 250_000)
    assert got == "lean" and measured == ["default", "lean"]
    assert ann_kernels.describe()["profile"]["figures"]["default"]["predicted_per_cpu_s"] == 2_000
    ann_kernels.CHOICE = ann_kernels.PROFILE = None  # another process, same CPU and kernels: the cache answers
    ann_kernels.known()
    assert ann_kernels.choose_profile(lambda name: pytest.fail("measured again"), 250_000) == "lean"

    ann_kernels.CHOICE = ann_kernels.PROFILE = None
    monkeypatch.setenv(
        ann_kernels.ENV, "avx2" if "avx2" in ann_kernels._allowed(ann_kernels.cpu_description()[1]) else "baseline"
    )
    if ann_kernels.known() == "avx2":  # another kernel set on this CPU is measured for itself
        assert ann_kernels.choose_profile(lambda name: figures(300.0), 250_000) == "default"
    ann_kernels.CHOICE = ann_kernels.PROFILE = None
    monkeypatch.setenv(ann_kernels.ENV, "baseline")
    monkeypatch.setattr(ann_kernels, "PROFILES", {"default": {}, "lean": {"leaves_fraction": 0.33}})
    too_slow = {"default": figures(900.0), "lean": figures(1000.0)}
    fresh.joinpath("ann_kernels.json").unlink()
    ann_kernels.known()
    assert ann_kernels.choose_profile(lambda name: too_slow[name], 250_000) == "default"  # none reaches: the fastest


def test_a_small_index_keeps_the_default_profile_and_a_pin_wins(fresh, monkeypatch):
    monkeypatch.setenv(ann_kernels.ENV, "baseline")
    ann_kernels.known()
    assert ann_kernels.choose_profile(lambda name: pytest.fail("measured a small index"), 5_000) == "default"
    monkeypatch.setenv(ann_kernels.PROFILE_ENV, "lean")
    assert ann_kernels.choose_profile(lambda name: pytest.fail("measured a pinned profile"), 250_000) == "lean"
    monkeypatch.setenv(ann_kernels.PROFILE_ENV, "fastest")
    with pytest.raises(ValueError, match=ann_kernels.PROFILE_ENV):
        ann_kernels.known_profile()


def test_an_index_is_trained_with_the_profile_its_process_chose_where_its_caller_did_not_set_one(fresh):
    from tests.transforms.stories.test_ann import ann, clustered

    sig = ann_kernels.signature(*ann_kernels.cpu_description())
    profile = {"profile": "lean", "method": ann_kernels.PROFILE_METHOD}
    entry = {"kernels": "baseline", "method": ann_kernels.METHOD, "profiles": {"baseline": profile}}
    (fresh / "ann_kernels.json").write_text(json.dumps({sig: entry}))
    data = clustered(700, seed=1)
    index = ann(pca_dims=None)  # the tests' helper sets pca_dims=16 and leaves_fraction=0.7: remove one
    del index._explicit["pca_dims"]
    index.bulk_upsert(range(len(data)), data)
    assert index.approximate and ann_kernels.describe()["profile"]["profile"] == "lean"
    assert index.pca_dims == ann_kernels.PROFILES["lean"]["pca_dims"]  # taken from the profile
    assert index.leaves_fraction == 0.7  # given by the caller: kept
