"""How many bytes the direct GPU scrape may pull through the API server, and which exporters get them.

Scraping every dcgm-exporter through the pod proxy on every poll costs the control plane about
`exporters × 55–70 KB` per poll: on a 1,000-node fleet polled every 5 s, 500–700 MB a minute
(issue 18). The scrape is therefore budgeted in bytes per minute (`--scrape-budget`):

* `ByteBudget` paces the spending (a token bucket refilled at 90 % of the budget's rate, so a
  poll gets a little less than `interval` seconds' worth, and the bucket's first few seconds stay
  within the minute) and enforces it hard over any 60 s window: a request is only
  started when the bytes settled in the last minute, plus those reserved by requests in flight,
  plus its own estimate, fit. Estimates are the exporter's last response size (a first guess
  above the usual size for exporters never read), so the window holds unless an exporter's answer
  suddenly grows; the excess is then carried as debt and paid back before the next request.
* `plan_round` orders the exporters: the nodes the console shows (`priority`) first, then the
  rest, each oldest first: fresh data where people look, a fair round-robin for the fleet. When a
  poll had no room for the rest, the next one starts with the oldest of them, so the rotation
  never starves however many nodes are on screen.
  The plan stops at the first exporter that does not fit, so a big exporter is never overtaken.
* `refresh_note` says, in one line, when the budget cannot keep the whole fleet fresh within
  `FRESH_WITHIN`; its text up to the first ";" is short enough for the status bar (`short_note`).

Pure bookkeeping: no I/O; the clock is injectable.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence

__all__ = ["AUTO", "AUTO_FLOOR", "DEFAULT_BUDGET", "FIRST_GUESS", "FRESH_WITHIN", "HTTP_OVERHEAD", "NOTE_PREFIX", "WINDOW",
           "ByteBudget", "auto_budget", "budget_text", "format_bytes", "format_span", "parse_budget", "plan_round",
           "refresh_note", "relist_interval", "short_note", "sweep_seconds"]

# The default is derived from the fleet (`auto_budget`). Issue 18's target for the whole console is
# 2 % of what the seeds' way of watching costs the same cluster: `watch kubectl get … -o json`
# every 2 s plus a dcgm scrape loop reading every exporter through the API server every 30 s
# (dcgm-exporter's default collection interval). The scrape alone gets 2 % of that scrape loop:
# on `large` (1,000 exporters, ~69 MB a round) 2.7 MB a minute; the informers and the visibility
# poller (~1 MB a minute there) fit in the 2 % of the kubectl loops (~90 MB a minute) that is left.
# A small fleet gets at least `AUTO_FLOOR`: a load no API server notices, and a fresh small fleet.
AUTO = -1  # `--scrape-budget auto`: derived from the fleet size and its exporters' answers
AUTO_SHARE = 0.02
SEED_ROUNDS_PER_MINUTE = 2.0  # the seeds' scrape loop: every exporter every 30 s
AUTO_FLOOR = 2_000_000  # bytes per minute: ~30 exporter reads, a 10-node fleet every ~20 s
DEFAULT_BUDGET = AUTO  # bytes per minute; 0 = unlimited, AUTO = derived from the fleet
WINDOW = 60.0  # the budget is per minute, held over any 60 s window
HTTP_OVERHEAD = 1024  # request line + headers (a cloud bearer token is ~1 KB) + response headers
FIRST_GUESS = 100_000  # an exporter never read: 8 GPUs serve 50–100 KB (the sim 54 KB, issue 18 ~70 KB)
FRESH_WITHIN = 120.0  # a fleet swept less often than this is called out in the status bar
LIST_SHARE = 0.1  # at most this share of the budget goes to listing the exporter pods
MIN_RELIST = 30.0  # seconds: new exporter pods (nodes scaled up) are found within this at least
MAX_RELIST = 600.0  # … and at most this, however small the budget
PACE = 0.9  # the bucket refills at this share of the budget: the window then never has to stop a
# whole poll (which would skip the nodes on screen for one poll) when estimates run a little high
MIN_BUDGET = 250_000  # the list of exporter pods and one first read of an exporter must fit
NOTE_PREFIX = "scrape budget "  # how a budget note starts (the status bar recognises it)

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "ki": 2**10, "mi": 2**20, "gi": 2**30}
_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*(?:/\s*min)?\s*$")


def parse_budget(text: str) -> int:
    """`20MB`, `20MiB`, `500k` or plain bytes, an optional `/min`; `0` or `unlimited`
    means no budget (every exporter on every poll); `auto` is `AUTO` (derived from the fleet). Decimal units are powers of 1000 (`MB`), binary
    ones powers of 1024 (`MiB`). ValueError with a one-line reason otherwise."""
    raw = str(text).strip()
    if raw.lower() in ("unlimited", "none", "off"):
        return 0
    if raw.lower() == "auto":
        return AUTO
    m = _BUDGET.match(raw)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a byte budget: {raw!r} (use e.g. 10MB, 20MiB, 500k, auto, or 0 for unlimited)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value and value < MIN_BUDGET:
        raise ValueError(f"scrape budget {raw!r} is below {format_bytes(MIN_BUDGET)} a minute: "
                         "not even one exporter would fit (0 means unlimited)")
    return int(value)


def format_bytes(n: float) -> str:
    """Decimal units, as the flag reads them: 10MB, 1.5MB, 540kB."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            v = n / size
            return f"{v:.0f}{unit}" if v >= 10 or v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}B"


def budget_text(per_minute: int, *, auto: bool = False) -> str:
    if per_minute == AUTO:
        return "auto"
    if per_minute <= 0:
        return "unlimited"
    return f"{'auto ' if auto else ''}{format_bytes(per_minute)}/min"


def auto_budget(sweep_bytes: float) -> int:
    """The default budget for a fleet whose exporters answer `sweep_bytes` in all: `AUTO_SHARE` of
    the seeds' scrape loop (every exporter `SEED_ROUNDS_PER_MINUTE` times a minute), at least
    `AUTO_FLOOR`."""
    return max(AUTO_FLOOR, int(AUTO_SHARE * SEED_ROUNDS_PER_MINUTE * max(0.0, sweep_bytes)))


def format_span(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))}s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)}m"
    return f"{seconds / 3600:.1f}h"


class ByteBudget:
    """Bytes per minute: paced by a token bucket, held hard over any `WINDOW` seconds. Thread-safe."""

    def __init__(self, per_minute: int, *, burst_seconds: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = max(0, int(per_minute))
        self._clock = clock
        self._lock = threading.Lock()
        self._burst_seconds = max(1.0, burst_seconds)
        self.rate = PACE * self.per_minute / WINDOW  # bytes per second
        self.burst = self.per_minute / WINDOW * self._burst_seconds
        self._tokens = self.burst
        self._at = clock()
        self._settled: deque[tuple[float, int]] = deque()  # (time, bytes) in the last window
        self._settled_sum = 0
        self._reserved = 0  # estimates of requests in flight
        self.total = 0  # every byte settled since the start

    @property
    def unlimited(self) -> bool:
        return self.per_minute <= 0

    def set_per_minute(self, per_minute: int) -> None:
        """A new limit (an automatic budget follows the fleet): the pace and the bucket's size change
        at once, the bytes already settled stay in the window."""
        with self._lock:
            if self.unlimited or per_minute <= 0 or int(per_minute) == self.per_minute:
                return  # unlimited stays unlimited, a limit never becomes unlimited this way
            self._refill(self._clock())
            full = self._tokens >= self.burst  # a full bucket stays full, whatever its new size
            self.per_minute = int(per_minute)
            self.rate = PACE * self.per_minute / WINDOW
            self.burst = self.per_minute / WINDOW * self._burst_seconds
            self._tokens = self.burst if full else min(self._tokens, self.burst)

    def _refill(self, now: float) -> None:
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        cutoff = now - WINDOW
        while self._settled and self._settled[0][0] <= cutoff:
            self._settled_sum -= self._settled.popleft()[1]

    def try_reserve(self, estimate: int) -> bool:
        """Take `estimate` bytes for a request about to start, if the pace and the window allow."""
        with self._lock:
            if self.unlimited:
                self._reserved += estimate
                return True
            self._refill(self._clock())
            # A request bigger than the bucket still goes once the bucket is full (it runs into debt).
            if self._tokens < min(estimate, self.burst):
                return False
            if self._settled_sum + self._reserved + estimate > self.per_minute:
                return False
            self._tokens -= estimate
            self._reserved += estimate
            return True

    def settle(self, estimate: int, actual: int, *, paced: bool = True) -> None:
        """The request ended: `actual` bytes moved (0 when it failed before an answer).
        `paced=False`: counted in the window only (a request that had to go, unreserved)."""
        with self._lock:
            now = self._clock()
            self._refill(now)
            self._reserved = max(0, self._reserved - estimate)
            if not self.unlimited and paced:
                self._tokens -= actual - estimate  # an answer larger than guessed is paid back later
            self._settled.append((now, actual))
            self._settled_sum += actual
            self.total += actual

    def last_minute(self) -> int:
        """Bytes settled in the last `WINDOW` seconds."""
        with self._lock:
            self._refill(self._clock())
            return self._settled_sum


def relist_interval(list_bytes: int, per_minute: int) -> float:
    """Seconds between two lists of the exporter pods (each ~2 KB per pod: 2 MB on 1,000 nodes),
    so that listing takes at most `LIST_SHARE` of the budget; every poll when unlimited."""
    if per_minute <= 0:
        return 0.0
    return min(MAX_RELIST, max(MIN_RELIST, list_bytes / (LIST_SHARE * per_minute / WINDOW)))


def plan_round(keys: Sequence[Hashable], *, node_of: Mapping[Hashable, str],
               last_scraped: Mapping[Hashable, float], estimate: Callable[[Hashable], int],
               priority: Collection[str], budget: ByteBudget, cold_first: bool = False) -> list[Hashable]:
    """The exporters to read this poll, in order; each one's estimate is reserved in `budget`.

    The priority nodes' exporters go first, oldest first, then the others, oldest first. When the
    last poll read none of the others (`cold_first`), the oldest of them goes first instead, so
    the rotation moves at least every other poll however many nodes are on screen."""
    never = -math.inf
    hot = sorted((k for k in keys if node_of.get(k, "") in priority), key=lambda k: last_scraped.get(k, never))
    cold = sorted((k for k in keys if node_of.get(k, "") not in priority), key=lambda k: last_scraped.get(k, never))
    order = cold[:1] + hot + cold[1:] if cold_first else hot + cold
    chosen: list[Hashable] = []
    for k in order:
        if not budget.try_reserve(estimate(k)):
            break
        chosen.append(k)
    return chosen


def sweep_seconds(per_minute: int, sweep_bytes: float, interval: float | None = None,
                  hot_bytes: float = 0.0, exporters: int = 1) -> float:
    """About how long reading every exporter off screen once takes within the budget (at least
    a poll): `sweep_bytes` for all of them, `hot_bytes` for those read on every poll first."""
    if per_minute <= 0:
        return interval or 0.0
    poll = interval or 5.0
    usable = per_minute * (PACE - LIST_SHARE) / WINDOW  # bytes a second left for reads
    cold_bytes = max(0.0, sweep_bytes - hot_bytes)
    # The nodes on screen take their share first; the rotation moves at least every other poll.
    floor = sweep_bytes / max(1, exporters) / (2 * poll)
    sweep = cold_bytes / max(usable - hot_bytes / poll, floor)
    return max(sweep, poll)


def refresh_note(per_minute: int, exporters: int, sweep_bytes: float, interval: float | None = None,
                 hot_bytes: float = 0.0, *, auto: bool = False) -> str | None:
    """One line when `per_minute` cannot read all `exporters` (`sweep_bytes` in all) within
    `FRESH_WITHIN`; None when it can. The status bar shows the part before the first ";"."""
    if per_minute <= 0 or exporters <= 0:
        return None
    sweep = sweep_seconds(per_minute, sweep_bytes, interval, hot_bytes, exporters)
    if sweep <= FRESH_WITHIN:
        return None
    span = format_span(sweep)
    return (f"{NOTE_PREFIX}{budget_text(per_minute, auto=auto)}: {exporters} nodes refresh every {span} — use --prometheus; "
            f"reading all {exporters} dcgm-exporters through the API server takes {format_bytes(sweep_bytes)}, "
            f"so within the budget each node off screen is read about every {span} (nodes on screen and "
            f"those of the selected workload first); raise --scrape-budget or read GPU metrics from "
            f"Prometheus for a fresh fleet")


def short_note(message: str) -> str | None:
    """The status-bar form of a budget note (None for any other message)."""
    if not message.startswith(NOTE_PREFIX):
        return None
    return message.split(";", 1)[0].removeprefix("scrape ")
