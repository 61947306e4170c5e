"""An embedder in a process of its own, for the backfill's overlapped writer (transforms/stories/writer/overlap.py).

Reads texts (sent over a pipe); writes the vectors :func:`transforms.stories.embed.embed.get_embedder` gives for the same
spec in that process, the same bits (the model code, the per-CPU arithmetic choice and the batch-independent blocks
are those of embed.py).

Why a process and not a thread beside the writer: the writer is plain Python and holds the GIL most of the time, and
the sentence-transformers forward pass needs the GIL between its kernels. Measured on this machine, one busy Python
thread beside the encoder cut it from 30.0 to 16.8 texts/s (25.9 with a 0.5 ms switch interval): the two would take
turns instead of overlapping. In its own process the encoder keeps its worker threads (one per core, as in embed.py)
and the writer runs beside it; the vectors cross the pipe pickled (~1.5 kB per headline, negligible).

Why one process and not a pool: the encoder already uses every core with its own threads; one process loads the
model once (start-up paid once per parent process: :func:`shared_process` keeps it for later runs of the same
process), where a pool would load it once per worker.

Arithmetic: for ``minilm`` (int8 or fp32 by the CPU, transforms/stories/embed/cpu.py) the parent makes the choice and the
child uses it, so a backfill makes one choice, the one its manifest records, not one per process.

Limit: the child is started with multiprocessing's ``spawn``, which imports the parent's main script again: a script
that runs a backfill at import time (``pipelines.backfill.run`` outside ``if __name__ == "__main__":``) fails with
multiprocessing's "bootstrapping phase" error and the embedder process exits (a clear RuntimeError in the parent).
``newsroom backfill``, ``python -m pipelines.backfill``, ``python -c`` and the tests are not affected. Starting the
child as ``python -m`` of its own module would lift this.

Which specs: the sentence-transformers ones (``minilm``, ``minilm-int8``, ``minilm-fp32``, ``st:PATH``), whose forward
pass is GIL-bound; ``hash`` and ``use`` (numpy) run in the caller's process (:func:`wants_process`).
"""

from __future__ import annotations

import atexit
import threading

_PROCESSES: dict[str, EmbedderProcess] = {}
_LOCK = threading.Lock()


def wants_process(spec: str) -> bool:
    return spec.startswith(("minilm", "st:"))


def _serve(spec: str, conn) -> None:  # the child's loop
    import signal

    # Ctrl-C reaches the whole process group: the parent stops the run (one line) and ends this daemon child,
    # which must not print a traceback of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from transforms.stories.embed import cpu
    from transforms.stories.embed.embed import get_embedder

    try:
        choice = conn.recv()
        if choice is not None:
            cpu.adopt(choice)  # the parent's arithmetic choice: one per backfill, the one its manifest records
        model = get_embedder(spec)
        conn.send(("ready", (model.name, model.dim, dict(getattr(model, "path_info", {})))))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            texts = conn.recv()
        except EOFError:
            return
        if texts is None:
            return
        try:
            conn.send(("ok", model.encode(texts)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class EmbedderProcess:
    """``encode(texts)`` answered by a spawned process holding ``get_embedder(spec)``; one call at a time.

    ``name``, ``dim``, ``path_info``: the child's embedder's (known once it is ready: :meth:`ready`)."""

    def __init__(self, spec: str):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # not fork: the parent may hold torch and BLAS thread pools
        self.spec = spec
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(spec, child), name=f"embed-{spec}", daemon=True)
        self._proc.start()
        child.close()
        choice = None
        if spec == "minilm":  # int8 or fp32 by the CPU (cpu.py): chosen here, once, while the child imports torch
            from transforms.stories.embed import cpu

            choice = cpu.choose_path()
        self._conn.send(choice)
        self._lock = threading.Lock()
        self._info = None

    def _recv(self):
        try:
            kind, value = self._conn.recv()
        except EOFError:
            raise RuntimeError(f"embedder process {self.spec} exited (code {self._proc.exitcode})") from None
        if kind == "error":
            raise RuntimeError(f"embedder process {self.spec}: {value}")
        return value

    def ready(self) -> tuple[str, int, dict]:
        """(model name, dim, path_info), waiting for the child to load the model."""
        with self._lock:
            if self._info is None:
                self._info = self._recv()
            return self._info

    def encode(self, texts: list[str]):
        self.ready()
        with self._lock:
            self._conn.send(list(texts))
            return self._recv()

    def close(self) -> None:
        with self._lock:
            if self._proc.is_alive():
                try:
                    self._conn.send(None)
                except OSError:
                    pass
                self._proc.join(timeout=10)
            if self._proc.is_alive():
                self._proc.terminate()
            self._conn.close()


def shared_process(spec: str) -> EmbedderProcess:
    """The process-wide child for ``spec``, started on first use (a dead one is replaced)."""
    with _LOCK:
        p = _PROCESSES.get(spec)
        if p is None or not p._proc.is_alive():
            p = _PROCESSES[spec] = EmbedderProcess(spec)
        return p


@atexit.register
def _close_all() -> None:
    with _LOCK:
        for p in _PROCESSES.values():
            p.close()
        _PROCESSES.clear()
