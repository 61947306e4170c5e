"""Nearest live centroids, the writer's candidate search: :mod:`.index` (the view the writer uses, exact or ANN,
``make_index``) over :mod:`.ann` (the approximate index).

Exports: the modules.
May import: :mod:`transforms.stories.vocabulary`; numpy.
"""
