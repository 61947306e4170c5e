"""MinHash user clusters (Das et al., Google News personalization, WWW 2007): For you's "readers like you" source.

- :mod:`transforms.userclusters.minhash`: the plain logic (no Beam): the hash family, a reader's clusters, and the
  decayed per-cluster click counts the co-visitation job keeps online.
- :mod:`transforms.userclusters.beam`: the Beam stages (the daily clustering, the online per-cluster counts).
"""
