"""One error policy for every ``newsroom`` command (pipelines/cli.py applies it around each subcommand).

- A bad flag, an unreadable or wrong-shaped input, a missing data dir: one line on stderr,
  ``newsroom COMMAND: error: WHAT``, and exit status 2, never a traceback. Commands raise :class:`CommandError`
  (status 2 by default, 1 when the stores refuse what was asked) or let a ValueError or OSError about an input
  through; argparse's own errors are one line too (:class:`OneLineParser`).
- A store that cannot be reached (StoreError): one line, status 1. Anything else is a bug: one line naming the
  exception, status 1, and the traceback only with ``NEWSROOM_TRACEBACK=1``.
- Untrusted text (flag values echoed back, stored titles, reasons, URLs) is printed safely: :func:`shown` writes
  control and format characters, line separators and the backslash as Python escapes (``\\x1b``, ``\\n``,
  ``\\u202e``), so a value can neither drive the terminal nor forge an output line; and while a command runs, its
  stdout and stderr go through :class:`SafeStream`, which escapes the same characters except newline and tab
  anywhere a command prints, so a title read from a store cannot either.
- A time (ms since the epoch) is printed by :func:`utc_text`, in UTC, to the minute, second or millisecond.
- A job run as a command (``python -m pipelines.JOB``, and the dispatcher's job rows): :func:`run_job`.

In the jobs' layer (pipelines/), below the commands layer (pipelines/cli.py, pipelines/commands/), because the
jobs use it too: a job never imports the dispatcher.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime

UNSAFE = ("Cc", "Cf", "Zl", "Zp", "Cs")
_ASCII_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # the ASCII controls but newline and tab


class CommandError(Exception):
    """A refused command: ``status`` 2 (bad flag or input) or 1 (the stores refuse), message for stderr."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def _escaped(ch: str) -> str:
    return ch.encode("unicode_escape", "backslashreplace").decode("ascii")


def write_text_output(text: str, path: str | None, summary: str) -> None:
    """An export's ``text`` to the file ``path`` (then ``summary`` and where it went, on stdout), or to stdout."""
    if not path:
        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{summary} written to {shown(path)}")


def shown(text) -> str:
    """``text`` made safe to print on one terminal line (module docstring)."""
    return "".join(_escaped(ch) if ch == "\\" or unicodedata.category(ch) in UNSAFE else ch for ch in str(text))


_UTC_UNITS = {"min": "%Y-%m-%d %H:%M", "s": "%Y-%m-%d %H:%M:%S", "ms": "%Y-%m-%d %H:%M:%S.%f"}


def utc_text(ms: int, unit: str = "s") -> str:
    """``ms`` since the epoch as every command prints a time: ``2024-03-01 12:00:05 UTC`` (``unit`` ``"min"``,
    ``"s"`` or ``"ms"``, which keeps three decimals)."""
    text = datetime.fromtimestamp(int(ms) / 1000, tz=UTC).strftime(_UTC_UNITS[unit])
    return (text[:-3] if unit == "ms" else text) + " UTC"


def safe_lines(text: str) -> str:
    """``text`` with every unsafe character escaped except newline and tab (the lines a command prints)."""
    if text.isascii():  # the common case, at regex speed (a report of megabytes stays fast)
        return _ASCII_UNSAFE.sub(lambda m: _escaped(m.group()), text)
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch) not in UNSAFE else _escaped(ch) for ch in text)


class SafeStream:
    """A text stream that escapes what :func:`safe_lines` escapes before writing; everything else is delegated."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(safe_lines(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class OneLineParser(argparse.ArgumentParser):
    """argparse's errors as one line (``newsroom COMMAND: error: ...; see --help``), exit status 2."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {shown(message)} (see {self.prog} --help)\n")
        raise SystemExit(2)


def require_folder(path: str, flag: str) -> None:
    """CommandError unless ``path`` is an existing folder (an input the command reads, or an output folder)."""
    if not os.path.isdir(path):
        what = "is a file, not a folder" if os.path.exists(path) else "no such folder"
        raise CommandError(f"{flag} {shown(path)}: {what}")


def load_input(flag: str, path: str | None, load: Callable, what: str):
    """``load(path)``, an input file a flag names read and checked; CommandError naming the flag and the file when
    it cannot be read or has the wrong shape (the loaders' KeyError, TypeError and AttributeError included)."""
    try:
        return load(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CommandError(f"{flag} {shown(path)}: cannot read it: {reason}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CommandError(f"{flag} {shown(path)}: not {what}: {exc}") from None


def run_command(name: str, body: Callable[[], int], safe_output: bool = True) -> int:
    """``body()``'s exit status under the policy of the module docstring."""
    from stores.base import StoreError

    saved = sys.stdout, sys.stderr
    if safe_output:
        sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        return body()
    except CommandError as exc:
        return _fail(name, str(exc), exc.status)
    except StoreError as exc:
        return _fail(name, f"the stores refused or cannot be reached: {exc}", 1)
    except BrokenPipeError:  # `newsroom X | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        return 0
    except (ValueError, OSError) as exc:
        return _fail(name, _input_error(exc), 2)
    except KeyboardInterrupt:
        return _fail(name, "interrupted", 130)
    except Exception as exc:
        if os.environ.get("NEWSROOM_TRACEBACK") == "1":
            raise
        detail = f"internal error: {type(exc).__name__}: {exc} (NEWSROOM_TRACEBACK=1 shows the traceback)"
        return _fail(name, detail, 1)
    finally:
        sys.stdout, sys.stderr = saved


def _input_error(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


def _fail(name: str, message: str, status: int) -> int:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    print(f"newsroom {name}: error: {shown(message)}", file=sys.stderr)
    return status


def run_job(name: str, run, argv: list[str]) -> int:
    """A Beam job's ``run(argv)`` as a command (``newsroom JOB`` and ``python -m pipelines.JOB``): a ValueError, an
    inconsistent flag named in its message, is one line on stderr and exit status 2, not a traceback."""
    try:
        result = run(argv)
    except (ValueError, CommandError) as exc:
        print(f"newsroom {name}: error: {shown(exc)}", file=sys.stderr)
        return exc.status if isinstance(exc, CommandError) else 2
    return result if isinstance(result, int) else 0  # the streaming jobs return their PipelineResult
