"""gunicorn settings of the origin (``newsroom serve`` loads this file; flags override it).

Worker model: gthread, 2 workers x 8 threads (one worker per core on this 2-core machine; scale workers with
cores). Chosen by measurement: ``benchmarks/serve_bench.py --compare`` (wrk -t2 -c32, keep-alive, 127.0.0.1, a 22 KB
edition page; For you with -c4), on a 2-core machine shared with other jobs (load average 8-12, so +-40 % noise):

    model          edition page req/s (two runs)   For you req/s (two runs)
    gthread 2x8    2609 / 2336                      1058 / 1371
    gthread 2x4    1907 / 3179                      1092 /  982
    gthread 4x4    1584 / 3987                      1162 / 1438
    gthread 1x16   1756 /  929                      1028 /  509
    sync    2       1021 /  665                       274 /  232
    sync    4        454 /  372                       135 /  181

- sync loses 2-5x: it closes the connection after every request (no keep-alive; the CDN and nginx reuse upstream
  connections) and a worker serves one request at a time, so one slow For you request blocks shared pages behind
  it, which defeats shedding For you first.
- one worker (1x16) is bound to one core by the GIL; 2x4 / 2x8 / 4x4 are within the noise of this machine. 2x8 is
  kept: one worker per core (each worker holds its own copy of every page and its own pointer watcher, so more
  workers cost memory and duplicate polling), and 8 threads leave 4 free for shared pages while the For you shedder
  holds at most 2 in flight + 2 waiting per worker (serving/http/shedding.py).
- Most shared traffic never reaches gunicorn's thread pool: the worker's poller answers plain GETs of section pages,
  edition versions and discovery documents itself through serving/worker/fastpath.py (serving/worker/gworker.py). Back to back
  (2026-12-02, load average ~2.8): origin / nginx static file 34.2 % (36,399 req/s) with this worker vs 7.9 %
  (8,342 req/s) with plain gthread 2x8, where gunicorn's thread hop and Python HTTP handling dominated.
- Slow clients: plain gthread gives a thread to a connection at its first byte and lets it block on the socket, so
  24 clients trickling headers held every thread (a slow-client probe), and later pipelined partial requests, chunks that
  looked final and clients that never read their responses did the same. serving/worker/gworker.py does every socket read
  and write in the poller: a thread runs gunicorn's parser and the app over bytes already read and returns the
  response bytes, so no client holds a thread (tests/security/test_slow_clients.py, test_http_limits.py on a real
  gunicorn). Running gunicorn's parser in the poller instead (one parser for both paths) was measured and refused:
  ~300 us per request against ~30 us for the poller's own strict pre-check (load average ~6), which would cap the
  poller well below the 25 % of nginx bar; so the fast path takes only requests that parser accepts with the same
  meaning (tests/security/test_http_fuzz.py checks it) and everything else goes to that parser. Cost of the
  change, serve_bench.py back to back (2026-12-03, load average 6.6-10.7): origin / nginx 30.9 % and 40.4 % with
  this worker, 26.9 % and 36.2 % with the one before it.
- gevent is not installed (and would need monkey-patching grpc for the Bigtable profile store).
"""

import multiprocessing
import os

# gthread whose poller does every socket read and write (serving/worker/gworker.py): slow clients cost no thread
worker_class = "serving.worker.gworker.BufferingThreadWorker"
workers = int(os.environ.get("NEWSROOM_WORKERS", min(2, multiprocessing.cpu_count()) or 1))
threads = int(os.environ.get("NEWSROOM_THREADS", 8))
keepalive = 75  # longer than the CDN's / nginx's idle upstream connection timeout (60 s), so they close first
timeout = 30
graceful_timeout = 10
backlog = 2048
worker_connections = 1000  # per worker; when full, a new one evicts the one waiting longest (serving/worker/gworker.py)
sendfile = False  # responses are written by the worker's poller from memory, never by a thread to the socket

# HTTP limits, the same on the poller's fast path and on the thread path (serving/worker/gworker.py, serving/worker/framing.py):
limit_request_line = 4094  # bytes of request line: longer is answered 414 (gunicorn's parser)
limit_request_fields = 100  # header lines: more is answered 431
limit_request_field_size = 8190  # bytes of one header line: longer is answered 431
# NEWSROOM_HEADER_TIMEOUT_S (default 10): a request must arrive within this of the connection opening, of its first
# byte after keep-alive, or of the previous response when pipelined; else the connection is closed.
# NEWSROOM_WRITE_TIMEOUT_S (default 30): a client must take its response within this; else it is closed.
# serving/worker/framing.py HEAD_MAX (64 KiB): the most the poller reads of a head; a longer one it answers 431 itself.
# serving/worker/framing.py BODY_MAX (1 MiB + 64 KiB): the most it reads of a body; a longer one is answered 413 unread,
# and the connection closed at once. Bare LF and malformed framing (several Content-Lengths, a coding other than
# chunked, a bad chunk) are handed to gunicorn's parser at once (400 / 501) and the connection closed.
accesslog = None
errorlog = "-"
loglevel = "info"
preload_app = False  # each worker builds its app (and threads, store connections) after the fork
