"""Developer tools, not product code: what runs Newsroom on one machine and what tests and benchmarks drive.

- ``devtools/run.py``: ``newsroom run``, the whole system on this machine with the sample world;
- ``devtools/emulators.py``: the local Pub/Sub, Bigtable and GCS emulators (``newsroom stack up|down|status``, the
  tests' ``emulator_stack`` fixture, ``newsroom run``);
- ``devtools/world/``: the sample publisher world (15 publishers' sites on 127.0.0.1) that ``newsroom run``,
  benchmarks/ingest_world.py and the ingest tests read;
- ``devtools/local_origin.py`` and ``devtools/edge_nginx.conf``: the origin under gunicorn behind nginx, the CDN
  stand-in, on loopback ports (tests/serving/test_edge.py, benchmarks/serve_bench.py);
- ``devtools/samples.py``: synthetic edition pages, candidate pools and story coverage for the origin's tests.

The top layer: it may import every product package, and no product package imports it (tests/test_layering.py,
no exception). It is neither in the wheel nor in the image (setup.py PACKAGES, templates/Dockerfile): a clone runs
it, the ``newsroom`` command's ``stack`` and ``run`` rows finding it beside the packages (pipelines/cli.py
``clone_root``); from an installed wheel those two commands say they need a clone.
"""
