"""A step that calls a flaky service: it fails twice, then answers, and the run recovers.

``fetch_quote`` declares a retry policy (``@step(retries=Retry(...))``): each failed attempt is
recorded in the run's chain (``wfctl log`` shows it under its step), the step backs off
(``initial * backoff ** (n - 1)`` seconds), and the successful attempt's result is what a
replay serves. A run killed or paused while it backs off resumes the schedule: the attempt
count goes on and it waits only for what is left of the backoff.

Run it (input: a symbol; default ``"WFC"``)::

    wfctl run sample_workflows/flaky_service.py --input '"WFC"'
    wfctl log <run id>

It returns ``{"symbol": "WFC", "price": 42, "attempts": 3}``.
"""

from __future__ import annotations

from collections import Counter

from wfctl import Retry, get_run_context, step, workflow

#: Calls of the pretend service per (run, symbol): it fails the first two of each.
_calls: Counter[tuple[str, str]] = Counter()


class ServiceUnavailable(Exception):
    """The pretend service's transient error (an HTTP 503)."""


@step(retries=Retry(attempts=5, initial=0.05, backoff=2.0, jitter=False), timeout=10.0)
async def fetch_quote(symbol: str) -> dict[str, object]:
    """Ask the flaky service for a quote: two 503s, then an answer."""
    context = get_run_context()
    caller = (context.run_id if context else "-", symbol)
    _calls[caller] += 1
    if _calls[caller] <= 2:
        raise ServiceUnavailable(f"503 from the quote service (call {_calls[caller]})")
    return {"symbol": symbol, "price": 42, "attempts": _calls[caller]}


@workflow(name="flaky_service")
async def flaky_service(symbol: str = "WFC") -> dict[str, object]:
    """Fetch one quote through the flaky service."""
    return await fetch_quote(symbol)
