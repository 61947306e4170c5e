"""Nearest live centroids, the writer's candidate search: :mod:`.index` (the view the writer uses, exact or ANN,
``make_index``) over :mod:`.ann` (the approximate index), whose ScaNN kernels :mod:`.ann_kernels` chooses by
measuring on the CPU.

Exports: the modules.
May import: :mod:`transforms.stories.vocabulary`; numpy.
"""
