"""Stories: articles clustered into stories per language by one writer, linked across languages, and followed over
time as storylines.

Rooms, bottom to top (a room imports only the rooms below it; tests/test_layering.py holds the order):

1. :mod:`.vocabulary`: the shared floor: the writer's calibration (:mod:`.vocabulary.config`), story and change
   ids, text features, places, and :class:`~.vocabulary.features.ArticleFeatures` (what the writer knows of an
   article);
2. :mod:`.embed`: the sentence encoders (MiniLM and the others), their arithmetic (int8 or fp32, per CPU) and the
   embedding child process;
3. :mod:`.index`: nearest live centroids (an ANN index and the exact search);
4. :mod:`.writer`: the per-language story writer (:class:`~.writer.cluster.StoryClusterer`): its state, scores,
   evidence, repair and re-clustering, restore from the store, explanations, and the application of its decisions
   to the story store;
5. :mod:`.links`: cross-language links between stories (:class:`~.links.links.StoryLinker`);
6. :mod:`.storylines`: stories of one subject over weeks (:class:`~.storylines.storyline.StorylineWriter`);
7. :mod:`.backfill`: the writers and the linker run in-process, and what a backfill writes (assignments, files);
8. :mod:`.beam`: the Beam layer of the stage.

Everything but :mod:`.beam` is plain Python + numpy (no Beam). docs/stories.md says how the writer decides.
"""
