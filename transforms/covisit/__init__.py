"""Co-visitation: decayed "read together" counts per story pair, a For you candidate source (DESIGN.md section 8).

- :mod:`transforms.covisit.counts`: the plain logic (no Beam), shared by the Beam stage and the tests.
- :mod:`transforms.covisit.beam`: the Beam stage (reader state -> pair increments -> per-story neighbour lists).
"""
