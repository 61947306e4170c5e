"""The launchable jobs (one module per Dataflow job, with its options) and the ``newsroom`` command."""
