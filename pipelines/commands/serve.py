"""``newsroom serve``: the origin, Flask (``serving.create_app``) under gunicorn with serving/worker/gunicorn.conf.py.

Started by ``newsroom serve`` (pipelines/cli.py's COMMANDS table registers this module's ``add_arguments`` and
``main``; there is no other entry point: ``python -m pipelines.cli serve ...`` is the same command).

Store flags are the same as pipelines/options.py ``StoreOptions`` (``--backend --data_dir --bigtable_instance
--snapshot_bucket --namespace``; a test keeps them in step) plus ``--project``; embedded backends by default.
They reach each gunicorn worker as ``NEWSROOM_*`` environment variables (create_app reads them), so every worker
builds its own app after the fork: its own pointer watcher thread and catalog, no SQLite connection or gRPC channel
crossing a fork. Secrets: NEWSROOM_TOKEN_SECRET and NEWSROOM_CURSOR_SECRET are required with ``--backend gcp`` (the
workers refuse to start without them); the embedded backend makes random ones once in ``{data_dir}/secrets.json``
that every worker and restart shares (serving.resolve_secrets).

``--issue_token READER`` prints a local bearer token for For you (signed with NEWSROOM_TOKEN_SECRET, or the local
secret of ``--data_dir``) and exits. Imports nothing heavy at module import time.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

# The origin's gunicorn settings ship with the origin (serving/worker/gunicorn.conf.py); found without importing serving.
CONF = Path(importlib.util.find_spec("serving").origin).parent / "worker" / "gunicorn.conf.py"


def add_arguments(parser) -> None:
    from stores import add_store_arguments

    add_store_arguments(parser, with_project=True)
    parser.add_argument(
        "--host",
        default=None,
        help="Address to listen on. Default: 0.0.0.0 when $PORT is set (Cloud Run), else 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=None, help="Port. Default: $PORT or 8080.")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers. Default: gunicorn.conf.py (2).")
    parser.add_argument("--threads", type=int, default=None, help="Threads per worker. Default: gunicorn.conf.py (8).")
    parser.add_argument(
        "--worker_class",
        default=None,
        help="gunicorn worker class. Default: gunicorn.conf.py (serving.worker.gworker.BufferingThreadWorker, gthread that "
        "reads each request before a thread takes it).",
    )
    parser.add_argument("--watch_interval", type=float, default=None, help="Seconds between pointer polls. Default: 2.")
    parser.add_argument(
        "--access_logfile", default=None, help="gunicorn access log ('-' = stderr). Default: none (it costs ~10%%)."
    )
    parser.add_argument("--issue_token", metavar="READER", default=None, help="Print a local For you token and exit.")


def environment(args, environ=None) -> dict[str, str]:
    """The NEWSROOM_* variables the workers read (create_app), from the flags and the current environment."""
    env = dict(os.environ if environ is None else environ)
    from stores import config_from_args, config_to_env

    try:
        env.update(config_to_env(config_from_args(args)))
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if args.watch_interval is not None:
        env["NEWSROOM_WATCH_INTERVAL_S"] = str(args.watch_interval)
    # One BLAS thread per worker: each request does small matrix products (For you), and OpenBLAS's own thread pool
    # oversubscribes the cores that the request threads need (1,000-candidate re-rank: 0.31 ms median with one BLAS
    # thread, 13.8 ms with the default pool, on this 2-core machine under load; benchmarks/serve_bench.py).
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    return env


def main(args) -> int:
    if args.issue_token:
        from serving import ConfigError, resolve_secrets
        from serving.http.auth import issue_token

        try:
            token_secret = os.environ.get("NEWSROOM_TOKEN_SECRET") or resolve_secrets(environment(args))[0]
        except ConfigError as exc:
            raise SystemExit(str(exc)) from None
        print(issue_token(token_secret, args.issue_token))
        return 0
    os.environ.update(environment(args))
    from serving import ConfigError, resolve_secrets

    try:  # refuse here, once, rather than in every worker's boot loop
        resolve_secrets(os.environ)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None

    from gunicorn.app.base import BaseApplication

    port = args.port or int(os.environ.get("PORT", "8080"))
    host = args.host or ("0.0.0.0" if os.environ.get("PORT") else "127.0.0.1")
    overrides = {"bind": [f"{host}:{port}"]}
    for flag, key in (("workers", "workers"), ("threads", "threads"), ("worker_class", "worker_class")):
        if getattr(args, flag) is not None:
            overrides[key] = getattr(args, flag)
    if args.access_logfile:
        overrides["accesslog"] = args.access_logfile

    class Origin(BaseApplication):
        def load_config(self):
            import runpy

            for key, value in runpy.run_path(str(CONF)).items():
                if key in self.cfg.settings:
                    self.cfg.set(key, value)
            for key, value in overrides.items():
                self.cfg.set(key, value)

        def load(self):
            from serving import create_app
            from serving.http import telemetry

            telemetry.configure_logging()  # JSON lines with severity and trace on Cloud Run (serving/http/telemetry.py)
            return create_app()

    Origin().run()
    return 0
