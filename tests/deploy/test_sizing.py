"""The Terraform sizes of each environment are the sizing plan's (docs/operations.md "Sizing"): the measured
per-stage costs (docs/sizing-measured.json, written by benchmarks/sizing_bench.py) through
pipelines/commands/sizing.py at the environment's design volume. A new measurement or assumption that changes a
size fails here, naming the setting and both values, until terraform/environments/ENV/main.tf follows."""

from __future__ import annotations

import re

import pytest
from deploy_helpers import REPO_ROOT

from pipelines.commands import sizing


def env_settings(env: str) -> dict[str, int]:
    text = (REPO_ROOT / "terraform" / "environments" / env / "main.tf").read_text()
    return {k: int(v) for k, v in re.findall(r"^\s+([a-z_]+)\s*=\s*([0-9]+)\s*$", text, re.M)}


@pytest.mark.parametrize("env", sorted(sizing.ENVIRONMENTS))
def test_terraform_sizes_are_the_plans(env):
    planned = sizing.terraform_settings(sizing.load_figures(), env)
    have = env_settings(env)
    wrong = {k: (have.get(k), v) for k, v in planned.items() if have.get(k) != v}
    assert not wrong, f"terraform/environments/{env}/main.tf (setting: (has, plan)): {wrong}"


def test_the_docs_table_is_the_plans():
    doc = (REPO_ROOT / "docs" / "operations.md").read_text()
    assert sizing.table(sizing.plan(sizing.load_figures())) in doc


def test_the_plan_grows_with_the_volume_and_uses_every_measurement():
    figures = sizing.load_figures()
    small, mid, big = sizing.plan(figures)
    assert small["stories_workers"] <= mid["stories_workers"] <= big["stories_workers"]
    assert small["cost_per_day"]["total"] < mid["cost_per_day"]["total"] < big["cost_per_day"]["total"]
    for key in ("normalise_cpu_ms", "embed_cpu_ms", "write_cpu_ms", "rank_cpu_s_per_1k_stories"):
        heavier = sizing.plan(dict(figures, **{key: figures[key] * 20}))[2]
        assert heavier["stories_cores_peak"] > big["stories_cores_peak"], key
    assert (
        sizing.plan(dict(figures, state_bytes_per_story=figures["state_bytes_per_story"] * 50))[2]["state_gb"]
        > big["state_gb"]
    )
