"""gunicorn settings of the origin (``newsroom serve`` loads this file; flags override it).

Worker model: gthread, 2 workers x 8 threads (on this 2-core machine; scale workers with cores). Chosen by
measurement with benchmarks/serve_bench.py (wrk, 32 connections, 127.0.0.1, a ~20 KB edition page); see the figures
in the benchmark's output and the report of issue 6:

- gthread keeps connections alive (the CDN and nginx reuse upstream connections); sync workers close every
  connection and can serve only one request per worker at a time, so one slow For you request blocks a worker,
  which defeats shedding For you first.
- Threads matter for the private path: a For you request may wait on the profile store (I/O, GIL released) while
  shared requests keep flowing on the other threads; the shedder keeps private requests to 2 in flight + 2 waiting
  per worker, so 4 of the 8 threads are always free for shared pages.
- gevent is not installed (and would need monkey-patching grpc for the Bigtable profile store).
- 2 workers (one per core) rather than more: each worker holds its own copy of every page in memory and its own
  pointer watcher; more workers than cores only adds context switches.
"""

import multiprocessing
import os

worker_class = "gthread"
workers = int(os.environ.get("NEWSROOM_WORKERS", min(2, multiprocessing.cpu_count()) or 1))
threads = int(os.environ.get("NEWSROOM_THREADS", 8))
keepalive = 75  # longer than the CDN's / nginx's idle upstream connection timeout (60 s), so they close first
timeout = 30
graceful_timeout = 10
backlog = 2048
worker_connections = 1000
accesslog = None
errorlog = "-"
loglevel = "info"
preload_app = False  # each worker builds its app (and threads, store connections) after the fork
