"""Developer tools, not product code: what runs Newsroom on one machine and what tests and benchmarks drive.

- ``devtools/emulators.py``: the local Pub/Sub, Bigtable and GCS emulators (``newsroom stack up|down|status``, the
  tests' ``emulator_stack`` fixture, ``newsroom run``);
- ``devtools/world/``: the sample publisher world (15 publishers' sites on 127.0.0.1) that ``newsroom run``,
  ``newsroom ingest --world`` and the ingest tests read;
- ``devtools/local_origin.py`` and ``devtools/edge_nginx.conf``: the origin under gunicorn behind nginx, the CDN
  stand-in, on loopback ports (tests/serving/test_edge.py, benchmarks/serve_bench.py);
- ``devtools/samples.py``: synthetic edition pages, candidate pools and story coverage for the origin's tests.

The top layer: it may import every product package, and no product package imports it except the local launchers
listed in tests/test_layering.py (``DEVTOOLS_LAUNCHERS``). It ships in the wheel and the image (the ``newsroom``
command's ``stack`` and ``run`` and ``ingest --world`` need it) but nothing deployed runs it.
"""
