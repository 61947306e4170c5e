"""The sentence encoders of the story writer: :mod:`.embed` (``get_embedder(spec)``: MiniLM and the others that
install offline), :mod:`.embedder_specs` (the accepted ``--embedder`` values), :mod:`.cpu` and :mod:`.int8` (int8 or
fp32 arithmetic, chosen per CPU and recorded), :mod:`.embed_process` (the encoder in a child process).

Exports: the modules.
May import: :mod:`transforms.stories.vocabulary`; torch and the encoders' packages (inside functions: slow to
import).
"""
