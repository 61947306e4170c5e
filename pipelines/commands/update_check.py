"""``newsroom update-check --from REF [--to REF]``: can the running streaming jobs be updated in place with this code,
or must they be drained and relaunched?

Dataflow's in-place update (``--update``) keeps each step's state and in-flight data by the step's name; it works
when every stateful step of the running job is still there under the same name with the same state and timer
specs and coders, and no PCollection changed its coder. Beam itself has no such check before the launch, and a
mismatch found by Dataflow's own check fails the launch (or, worse, a state cell written with one coder is read
with another). So this command compares, for each streaming job (ingest, stories, covisit):

- the graph of ``--from`` (the running version: a git ref, e.g. the release tag the jobs were launched from),
- the graph of ``--to`` (default: the working tree),

each built by its own checkout's code in a child process (``git worktree add`` of the ref in a temporary folder;
pipelines/update_graph.py records the graph instead of running it: nothing is submitted or contacted), and says per
job, then overall:

- ``update in place``: no state, timer or coder change (transforms added, stateless ones renamed or removed are
  named, with the ``--transform_name_mapping`` a rename needs);
- ``drain and relaunch``: a stateful step was removed or renamed, a step changed kind (URN), a state or timer spec
  was added, removed or changed kind or coder, or an output coder changed; each reason is printed;
- ``launch``: the job is new in ``--to``.

Exit status: 0 when every job can be updated in place, 1 when one must be drained, 2 for a bad ref or a graph that
could not be built (then the safe answer is to drain; the error is printed). docs/operations.md, "Updating the
streaming jobs", is the runbook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pipelines.commands.control import CommandError, refused, shown

UPDATE, DRAIN, LAUNCH = "update in place", "drain and relaunch", "launch"


def add_arguments(parser) -> None:
    parser.add_argument("--from", dest="from_ref", required=True, help="The running version: a git ref (tag, sha).")
    parser.add_argument(
        "--to", dest="to_ref", default=None, help="The new version: a git ref. Default: the working tree."
    )
    parser.add_argument("--repo", default=None, help="The git checkout. Default: the one this command runs from.")
    parser.add_argument("--json", action="store_true", help="Print the verdicts as one JSON object.")


def main(args) -> int:
    return refused(lambda: _main(args))


def _git(repo: Path, *argv: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise CommandError(f"git {' '.join(argv)}: {shown(done.stderr.strip()[-500:])}")
    return done.stdout.strip()


def repo_root(given: str | None) -> Path:
    if given:
        return Path(_git(Path(given), "rev-parse", "--show-toplevel"))
    here = Path(__file__).resolve().parent
    return Path(_git(here, "rev-parse", "--show-toplevel"))


def graph_of(tree: Path) -> dict:
    """The shape of each streaming job's graph in checkout ``tree`` (pipelines/update_graph.py, run by that
    checkout's Python path in a child process)."""
    script = (Path(__file__).resolve().parent.parent / "update_graph.py").read_text(encoding="utf-8")
    script += "\nmain(sys.argv[1])\n"  # the file is a script run with -c, not a module with a __main__ block
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tree)], cwd=tree, env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise CommandError(f"building the graphs of {tree} failed: {shown(done.stderr.strip()[-1500:])}")
    return json.loads(done.stdout)


def graph_at(repo: Path, ref: str | None) -> tuple[str, dict]:
    """(label, shapes) of ``ref`` (a temporary worktree), or of the working tree when ``ref`` is None."""
    if ref is None:
        return "the working tree", graph_of(repo)
    sha = _git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
    with tempfile.TemporaryDirectory(prefix="newsroom-update-check-") as tmp:
        tree = Path(tmp) / "tree"
        _git(repo, "worktree", "add", "--detach", str(tree), sha)
        try:
            return f"{ref} ({sha[:10]})", graph_of(tree)
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))


def _state_changes(name: str, old: dict, new: dict) -> list[str]:
    reasons = []
    for what in ("state", "timers"):
        before, after = old.get(what, {}), new.get(what, {})
        label = "state" if what == "state" else "timer"
        for cell in sorted(set(before) - set(after)):
            reasons.append(f"{name}: {label} {cell!r} removed (its running values would be lost)")
        for cell in sorted(set(after) - set(before)):
            reasons.append(f"{name}: {label} {cell!r} added ({_spec(after[cell])})")
        for cell in sorted(set(before) & set(after)):
            if before[cell] != after[cell]:
                reasons.append(f"{name}: {label} {cell!r} changed: {_spec(before[cell])} -> {_spec(after[cell])}")
    return reasons


def _spec(spec: dict) -> str:
    if "kind" in spec:
        return f"{spec['kind'].removesuffix('_spec')} of {', '.join(spec['coders'].values())}"
    return f"{spec['domain']} timer of {spec['coder']}"


def compare_job(old: dict, new: dict) -> tuple[str, list[str]]:
    """(verdict, reasons) for one job's shapes (pipelines/update_graph.py)."""
    if new.get("absent"):
        return DRAIN, ["the job is gone from the new version: drain it (nothing replaces it)"]
    if old.get("absent"):
        return LAUNCH, ["the job is new: launch it"]
    for side, shape in (("running", old), ("new", new)):
        if "error" in shape:
            return DRAIN, [f"the {side} version's graph could not be built ({shape['error']}); drain to be safe"]
    before, after = old["transforms"], new["transforms"]
    drain, notes = [], []
    for name in sorted(set(before) - set(after)):
        if before[name].get("state") or before[name].get("timers"):
            drain.append(f"{name}: stateful step removed or renamed (its state cannot follow it)")
        elif "/" not in name:
            notes.append(f"{name}: removed or renamed (map it with --transform_name_mapping)")
    for name in sorted(set(before) & set(after)):
        if before[name]["urn"] != after[name]["urn"]:
            drain.append(f"{name}: the step changed kind ({before[name]['urn']} -> {after[name]['urn']})")
        drain += _state_changes(name, before[name], after[name])
        for tag in sorted(set(before[name]["outputs"]) & set(after[name]["outputs"])):
            was, now = before[name]["outputs"][tag], after[name]["outputs"][tag]
            if was != now:
                drain.append(f"{name}: output {tag} coder changed: {was} -> {now}")
    added = [n for n in sorted(set(after) - set(before)) if "/" not in n]
    if added:
        notes.append(f"steps added: {', '.join(added)}")
    if drain:
        return DRAIN, drain
    return UPDATE, notes or ["no state, timer or coder change"]


def compare(old: dict, new: dict) -> dict[str, tuple[str, list[str]]]:
    jobs = sorted(set(old) | set(new))
    return {j: compare_job(old.get(j, {"absent": True}), new.get(j, {"absent": True})) for j in jobs}


def _main(args) -> int:
    repo = repo_root(args.repo)
    old_label, old = graph_at(repo, args.from_ref)
    new_label, new = graph_at(repo, args.to_ref)
    verdicts = compare(old, new)
    drain = [j for j, (v, _) in verdicts.items() if v == DRAIN]
    overall = DRAIN if drain else UPDATE
    if args.json:
        doc = {"from": old_label, "to": new_label, "verdict": overall}
        doc["jobs"] = {j: {"verdict": v, "reasons": r} for j, (v, r) in verdicts.items()}
        print(json.dumps(doc, indent=1, sort_keys=True))
    else:
        print(f"update check: the running version {shown(old_label)} -> {shown(new_label)}")
        for job, (verdict, reasons) in verdicts.items():
            print(f"{job}: {verdict}")
            for r in reasons:
                print(f"  - {shown(r)}")
        why = f" ({', '.join(drain)}: a running job's state would not fit the new code)" if drain else ""
        print(f"verdict: {overall}{why}")
    errors = any("could not be built" in r for _, rs in verdicts.values() for r in rs)
    return 2 if errors else (1 if drain else 0)
