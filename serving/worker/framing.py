"""Where one HTTP/1.1 request ends in a connection's buffer, for the origin's gunicorn poller (serving/worker/gworker.py).

This is not a parser: it decides only when the bytes received so far are enough to hand to gunicorn's own parser
(which then judges them, with every limit gunicorn has), so that the parser never has to wait for the socket.
:func:`frame` answers one of:

- ``(want, None)``: the request may still be arriving (the poller keeps reading, under its header timeout); the
  answer cannot change before the buffer holds ``want`` bytes or a new LF arrives, so the poller does not look
  again before then (a client trickling bytes costs no rescans of its buffer);
- ``(n, True)``: the first ``n`` bytes are one whole request (head, and its body when it has one);
- ``(n, False)``: the first ``n`` bytes are all the poller will read of this request: the head breaks a limit or the
  framing rules (a bare LF, a request line over gunicorn's ``limit_request_line``, a
  Content-Length that is not one plain number, a transfer coding other than chunked), or its Content-Length is over
  :data:`BODY_MAX`. gunicorn's parser sees those bytes and then the end of input: it answers the error
  it finds (400, 413, 414, 431, 501), or the app answers (413 for a long body, read never), and the connection
  closes after that answer, so nothing after these bytes can be misread as the next request;
- ``(n, 400)`` / ``(n, 413)`` / ``(n, 431)``: a chunked body that is malformed, longer than :data:`BODY_MAX`, or
  whose trailer section is over :data:`HEAD_MAX`, or a head over :data:`HEAD_MAX` or with more lines than gunicorn
  takes (431). The poller answers this status itself and closes: handed on, the app would meet a body error only
  while reading the body (a 500), and gunicorn's parser, given a head cut at :data:`HEAD_MAX` (each of its lines
  within gunicorn's own limits), would meet the end of its input and close the connection without a word.

Rescans are bounded too: a head with more line breaks than gunicorn's ``limit_request_fields`` allows (+2) is
answered 431 by the poller before it ends (handed over unfinished, gunicorn's parser would meet the end of its input
and close without an answer), and a chunked body of more than :data:`CHUNKS_MAX` chunks is refused (413).

Chunked bodies are followed chunk by chunk (size line, data, CRLF, up to the last chunk and its trailer section), so a
chunk whose data happens to end in ``0\\r\\n\\r\\n`` does not pass for the end of the body.
"""

from __future__ import annotations

HEAD_MAX = 64 * 1024  # a longer head is answered 431 by the poller: stricter than gunicorn's own caps
BODY_MAX = 1024 * 1024 + 64 * 1024  # the largest body the origin takes (push: 1 MiB) plus slack
CHUNK_LINE_MAX = 1024  # a chunk-size line (size and extensions) longer than this is malformed
CHUNKS_MAX = 256  # chunks in one body: more is refused (413)
_HEX = frozenset(b"0123456789abcdefABCDEF")


def frame(buf: bytes | bytearray, request_line_max: int, fields_max: int = 100) -> tuple[int, bool | int | None]:
    """See the module docstring. ``request_line_max``, ``fields_max``: gunicorn's ``limit_request_line`` and
    ``limit_request_fields``."""
    end = buf.find(b"\r\n\r\n", 0, HEAD_MAX + 4)
    stop = end + 4 if end >= 0 else min(len(buf), HEAD_MAX + 4)
    line_end = buf.find(b"\r\n", 0, min(stop, request_line_max + 2))
    lines = buf.count(b"\n", 0, stop)
    if lines != buf.count(b"\r\n", 0, stop):
        return stop, False  # a bare LF: gunicorn's parser answers 400
    if end < 0 and lines > fields_max + 2:
        return stop, 431  # more header lines than gunicorn takes, the head unfinished: gunicorn would close silently
    if line_end < 0:
        return (stop, False) if stop > request_line_max + 1 else (request_line_max + 2, None)  # over: 414
    if end < 0:  # over HEAD_MAX: the poller answers 431 itself (gunicorn would meet a cut head and close silently)
        return (stop, 431) if len(buf) > HEAD_MAX else (HEAD_MAX + 1, None)
    coding = _body_coding(buf[line_end:end].lower())
    if coding is None:
        return stop, True
    if coding is False:
        return stop, False
    if coding == "chunked":
        return _chunked_end(buf, stop)
    if coding > BODY_MAX:
        return stop, False
    return (stop + coding, True if len(buf) >= stop + coding else None)


def _body_coding(headers: bytes) -> int | str | bool | None:
    """The body of a head: None (no body), its Content-Length, "chunked", or False (framing gunicorn refuses or
    the poller does not follow: both headers, several lengths, a length that is not digits, another coding).
    ``headers`` (lower-cased) starts with the CRLF that ends the request line, so every header line follows one."""
    if b"\r\ncontent-length" not in headers and b"\r\ntransfer-encoding" not in headers:
        return None  # most requests: a GET (a name with space before its colon is gunicorn's 400, not a length)
    length = chunked = None
    for line in bytes(headers).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip()
        if name == b"content-length":
            value = value.strip(b" \t")
            if length is not None or not value.isdigit() or len(value) > 15:
                return False
            length = int(value)
        elif name == b"transfer-encoding":
            if chunked is not None or value.strip(b" \t") != b"chunked":
                return False
            chunked = True
    if chunked and length is not None:
        return False
    return "chunked" if chunked else length


def _chunked_end(buf: bytes | bytearray, pos: int) -> tuple[int, bool | int | None]:
    """Where the chunked body starting at ``pos`` ends (see :func:`frame`)."""
    start = pos
    for _ in range(CHUNKS_MAX):
        eol = buf.find(b"\r\n", pos, pos + CHUNK_LINE_MAX + 2)
        if eol < 0:
            return (pos + CHUNK_LINE_MAX + 1, None) if len(buf) - pos <= CHUNK_LINE_MAX else (len(buf), 400)
        size = bytes(buf[pos:eol]).split(b";", 1)[0].strip(b" \t")
        if not size or len(size) > 8 or not _HEX.issuperset(size):
            return eol + 2, 400
        n = int(size, 16)
        if n == 0:
            return _trailer_end(buf, eol + 2)
        pos = eol + 2 + n
        if pos - start > BODY_MAX:
            return min(len(buf), pos), 413
        if len(buf) < pos + 2:
            return pos + 2, None
        if buf[pos : pos + 2] != b"\r\n":
            return pos + 2, 400
        pos += 2
    return min(len(buf), pos), 413


def _trailer_end(buf: bytes | bytearray, pos: int) -> tuple[int, bool | int | None]:
    """End of the trailer section (header lines, then an empty line) after the last chunk."""
    if buf[pos : pos + 2] == b"\r\n":
        return pos + 2, True
    end = buf.find(b"\r\n\r\n", pos, pos + HEAD_MAX)
    if end < 0:
        return (pos + HEAD_MAX + 1, None) if len(buf) - pos <= HEAD_MAX else (len(buf), 431)
    return end + 4, True
