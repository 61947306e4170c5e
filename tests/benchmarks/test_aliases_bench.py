"""benchmarks/aliases_bench.py prints what it measures: the map sizes are those the merge was timed after."""

from __future__ import annotations

from benchmarks import aliases_bench


def test_the_map_sizes_printed_are_the_history_s_not_the_timing_s(capsys):
    aliases_bench.main(["--sizes", "100", "1001", "--old_max", "1000", "--repeat", "1"])
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        cells = line.split()
        if cells and cells[0].replace(",", "").isdigit():
            rows[int(cells[0].replace(",", ""))] = [c.replace(",", "") for c in cells]
    assert rows[100][4] == "100" and rows[1001][4] == "1001"  # unpruned: every merge so far, none of the timed ones
    assert int(rows[100][1]) <= 100  # the map held after 100 merges
