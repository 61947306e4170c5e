"""The origin's HTTP floor: what every endpoint shares and nothing of the origin's state.

- :mod:`.conventions`: cache headers, ETags, the shared-endpoint guard, problem (error) bodies, limits;
- :mod:`.cursor`: opaque signed cursors (story pages, For you);
- :mod:`.auth`: reader tokens for the private endpoints (shared endpoints never look at them);
- :mod:`.shedding`: load shedding of the private endpoints, so shared pages keep answering;
- :mod:`.telemetry`: structured JSON logs and OpenTelemetry metrics (also used by ``newsroom serve``).

Exports: the modules (``from serving.http import conventions as http``).
May import: Flask, ``schemas``, ``stores`` (values and errors); nothing else of serving/.
"""
