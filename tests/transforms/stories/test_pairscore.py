"""The learned pair score: what the shipped model records, unknown time neutral, the fit, the batch features."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from tests.transforms.stories.synth import DIM, HOUR, T0, article
from transforms.stories.writer import pairscore


def test_the_shipped_model_records_its_features_training_data_and_held_out_scores():
    with open(pairscore.MODEL_PATH, encoding="utf-8") as fh:
        raw = json.load(fh)
    assert raw["features"] == list(pairscore.FEATURES)
    assert set(raw["weights"]) == set(pairscore.FEATURES)  # no "time unknown" or publisher feature
    assert re.fullmatch(r"[0-9a-f]{64}", raw["training_sha256"])
    assert raw["trained_on"] and all(name.endswith("-dev.jsonl") for name in raw["trained_on"])
    held = raw["leave_one_file_out"]
    assert set(held) == set(raw["trained_on"])
    assert all(0.5 < held[n]["auc"] <= 1.0 for n in held)
    assert set(raw["thresholds"]) == {"body", "headline"}
    model = pairscore.load()
    assert model.version == raw["version"] >= 1
    assert model.weights[pairscore.FEATURES.index("dense")] > 0


def test_a_model_of_other_features_is_refused():
    d = pairscore.load().to_dict()
    with pytest.raises(ValueError, match="features"):
        pairscore.PairScore.from_dict({**d, "features": ["dense", "time_unknown"]})


def test_an_unknown_time_is_neutral():
    rng = np.random.default_rng(3)
    v = rng.standard_normal(DIM)
    timed = [article("a", v, T0), article("b", v + 0.1, T0 + 40 * HOUR)]
    X = pairscore.batch_features(timed)
    assert X[0, 1, pairscore.FEATURES.index("time")] < -0.5  # 40 h apart: evidence against
    for far in (T0 + HOUR, T0 + 40 * HOUR):
        untimed = [timed[0], dataclasses.replace(timed[1], first_seen_at=far, time_known=False)]
        Xu = pairscore.batch_features(untimed)
        assert Xu[0, 1, pairscore.FEATURES.index("time")] == 0.0  # whatever its placeholder time says
    assert np.allclose(np.delete(X, 3, axis=-1), np.delete(Xu, 3, axis=-1))


def test_the_batch_features_are_cosines():
    rng = np.random.default_rng(4)
    v = rng.standard_normal(DIM)
    arts = [
        article("a", v, T0, terms=("quake", "chile"), entities=("chile", "valparaiso")),
        article("b", v, T0, terms=("quake", "chile"), entities=("chile", "valparaiso")),
        article("c", -v, T0, terms=("match",), entities=("oslo",)),
    ]
    X = pairscore.batch_features(arts)
    assert np.allclose(X[0, 1, :3], 1.0) and np.allclose(X[0, 2, 1:3], 0.0)
    assert X[0, 2, 0] == pytest.approx(-1.0)


def test_the_fit_recovers_the_weights_of_a_logistic_model():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((20_000, 4))
    true = np.array([-0.5, 3.0, 1.5, 0.0, -1.0])
    p = 1.0 / (1.0 + np.exp(-(true[0] + X @ true[1:])))
    y = (rng.random(len(X)) < p).astype(float)
    beta = pairscore.fit_logistic(X, y, np.full(len(X), 1.0 / len(X)), l2=0.0)
    assert np.allclose(beta, true, atol=0.15)
