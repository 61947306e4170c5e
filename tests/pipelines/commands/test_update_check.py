"""``newsroom update-check``: drain and relaunch when a stateful step's state, timers or coders change, update in
place otherwise. The comparison is tested on hand-made graph shapes (fast), and on the repository's history: the
ranker's state layout change (f3bc069 -> 55daf5d: RECEIVED and NEXT merged into one "chain" cell) must say
drain, a change that touches no state (6a7123c -> 55daf5d) must say update (slow: it builds six graphs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipelines.commands.update_check import DRAIN, LAUNCH, UPDATE, compare, compare_job

REPO_ROOT = Path(__file__).resolve().parents[3]

RMW = {"kind": "read_modify_write_spec", "coders": {"coder_id": "VarIntCoder"}}
BAG = {"kind": "bag_spec", "coders": {"element_coder_id": "PickleCoder"}}
TIMER = {"domain": "EVENT_TIME", "coder": "_TimerCoder"}


def job(**transforms) -> dict:
    return {
        "transforms": {
            n.replace("__", "/"): dict({"urn": "u", "outputs": {"None": "X"}}, **t) for n, t in transforms.items()
        }
    }


def test_same_graph_and_added_or_renamed_stateless_steps_update_in_place():
    old = job(Read={}, Rank__Fn={"state": {"next": RMW}, "timers": {"cycle": TIMER}}, Log={})
    assert compare_job(old, old) == (UPDATE, ["no state, timer or coder change"])
    new = job(Read={}, Rank__Fn={"state": {"next": RMW}, "timers": {"cycle": TIMER}}, Audit={})
    verdict, reasons = compare_job(old, new)
    assert verdict == UPDATE
    assert "Log: removed or renamed (map it with --transform_name_mapping)" in reasons
    assert "steps added: Audit" in reasons


@pytest.mark.parametrize(
    "new, reason",
    [
        (job(Read={}, Rank__Fn={"state": {"chain": RMW}, "timers": {"cycle": TIMER}}), "state 'next' removed"),
        (job(Read={}, Rank__Fn={"state": {"next": RMW, "log": BAG}, "timers": {"cycle": TIMER}}), "state 'log' added"),
        (job(Read={}, Rank__Fn={"state": {"next": BAG}, "timers": {"cycle": TIMER}}), "state 'next' changed"),
        (job(Read={}, Rank__Fn={"state": {"next": RMW}}), "timer 'cycle' removed"),
        (
            job(Read={}, Ranker__Fn={"state": {"next": RMW}, "timers": {"cycle": TIMER}}),
            "Rank/Fn: stateful step removed",
        ),
        (job(Read={"outputs": {"None": "Y"}}, Rank__Fn={"state": {"next": RMW}, "timers": {"cycle": TIMER}}), "coder"),
        (
            job(
                Read={"urn": "beam:transform:group_by_key:v1"},
                Rank__Fn={"state": {"next": RMW}, "timers": {"cycle": TIMER}},
            ),
            "changed kind",
        ),
    ],
)
def test_any_state_timer_or_coder_change_means_drain(new, reason):
    old = job(Read={}, Rank__Fn={"state": {"next": RMW}, "timers": {"cycle": TIMER}})
    verdict, reasons = compare_job(old, new)
    assert verdict == DRAIN and any(reason in r for r in reasons), reasons


def test_new_gone_and_unbuildable_jobs():
    out = compare({"stories": job(A={}), "old": job(A={})}, {"stories": {"error": "boom"}, "fresh": job(A={})})
    assert out["fresh"][0] == LAUNCH and out["old"][0] == DRAIN
    assert out["stories"][0] == DRAIN and "could not be built (boom)" in out["stories"][1][0]


def have(*refs) -> bool:
    return all(
        subprocess.run(["git", "-C", str(REPO_ROOT), "cat-file", "-e", f"{r}^{{commit}}"]).returncode == 0 for r in refs
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_history_drain_for_the_ranker_state_change_update_for_a_stateless_change(capsys):
    from pipelines.cli import main as newsroom

    if not have("f3bc069", "55daf5d", "6a7123c"):
        pytest.skip("a shallow clone: the compared commits are not here")
    assert newsroom(["update-check", "--from", "f3bc069", "--to", "55daf5d", "--repo", str(REPO_ROOT)]) == 1
    out = capsys.readouterr().out
    assert "stories: drain and relaunch" in out and "ingest: update in place" in out
    assert "RankEachEdition: state 'received' removed" in out and "state 'chain' added" in out
    assert out.rstrip().splitlines()[-1].startswith("verdict: drain and relaunch (stories")
    assert newsroom(["update-check", "--from", "6a7123c", "--to", "55daf5d", "--repo", str(REPO_ROOT)]) == 0
    out = capsys.readouterr().out
    assert "drain" not in out and out.rstrip().endswith("verdict: update in place")
    worktrees = subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "list"], capture_output=True, text=True)
    assert "newsroom-update-check-" not in worktrees.stdout  # the temporary checkouts are gone
