"""What the backfill and the tests run without Beam: :mod:`.local` (the writers and the linker in-process),
:mod:`.assignments` (a writer's change log folded into final assignments and story summaries), :mod:`.backfill_files`
(the files a backfill writes).

Exports: the modules.
May import: every room of the stories stage but :mod:`transforms.stories.beam`; ``stores``, ``transforms.common``.
"""
