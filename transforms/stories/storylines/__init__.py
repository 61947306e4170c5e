"""Storylines: the stories of one subject over weeks (:class:`~.storyline.StorylineWriter`, kept in Beam state;
its old path ``transforms.stories.storyline`` stays importable through transforms/moved.py).

Exports: the module :mod:`.storyline`.
May import: :mod:`transforms.stories.vocabulary`, ``transforms.common``.
"""
