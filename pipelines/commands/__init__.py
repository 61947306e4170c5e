"""The commands layer: every ``newsroom`` subcommand that is not a Beam job, one module each, named in
pipelines/cli.py's ``COMMANDS`` table (``add_arguments(parser)`` and ``main(args) -> int``).

Analyst commands: ``evaluate`` (B-cubed and pair scores of a backfill against gold labels, with its HTML page in
``evaluate_html``), ``explain`` (why the writer decided what it did), ``extract`` (saved pages to articles),
``fairness`` (per-publisher report of an edition's day). Operator commands: ``rollback``, ``control`` (pin,
demote, label, hold; ``control`` also holds the argument and purge helpers the three operator commands share) and
``takedown``. And ``serve``, the origin under gunicorn (what Cloud Run starts).

The layer sits above the jobs (pipelines/) and the origin (serving/) and may import both and every stage; nothing
below imports it, and it imports neither Beam nor the developer tools (tests/test_layering.py).
"""
