"""The stories' shared floor: the words every room of the stage speaks.

:mod:`.config` (the writer's calibration, :class:`~.config.ClusterConfig`, and time constants), :mod:`.ids` (story
and change ids, deterministic under replay), :mod:`.text` (ledes, lexical terms, entity-like keys), :mod:`.places`
(the places an article reports from, as gazetteer chains), :mod:`.numbers` (the ages a headline states),
:mod:`.features` (:class:`~.features.ArticleFeatures`:
what the writer knows about one article, from either input shape).

Exports: the modules.
May import: ``schemas``, ``transforms.common``, ``transforms.articles`` (entities, places); no other room of the
stories stage.
"""
