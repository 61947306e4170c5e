"""The per-language story writer: each article joins a live story or founds one, stories merge and split.

- :mod:`.cluster`: :class:`~.cluster.StoryClusterer`, the writer (decisions in order, one language);
- :mod:`.state` and :mod:`.writer_state`: its live stories and its typed state; :mod:`.records`: the records it
  emits (story meta, ``StoryChange``); :mod:`.restore`: its state rebuilt from the story store;
- :mod:`.scoring`, :mod:`.evidence`, :mod:`.lexical`, :mod:`.pairscore` (with ``pair_score.json``): how a pair of
  an article and a story, or of two stories, is judged;
- :mod:`.repair` and :mod:`.recluster`: merges and splits after the fact; :mod:`.explanations`: why a decision;
- :mod:`.apply`: the decisions applied to the story store, idempotently and in sequence; :mod:`.overlap`: the
  backfill's writer with its embedding overlapped; :mod:`.blas`: one BLAS thread.

Exports: the modules.
May import: :mod:`transforms.stories.vocabulary`, :mod:`transforms.stories.embed`, :mod:`transforms.stories.index`,
``stores`` (the story store), ``transforms.common``.
"""
