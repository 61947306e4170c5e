"""Cross-language links: :class:`~.links.StoryLinker` links the stories of one event told in several languages.

Exports: the module :mod:`.links`.
May import: :mod:`transforms.stories.vocabulary`, :mod:`transforms.stories.writer` (its records),
``transforms.common``.
"""
