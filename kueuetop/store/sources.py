"""Per-source connection state and data age, for the status bar and the stale flags."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SourceState(StrEnum):
    CONNECTING = "connecting"  # first list not finished yet
    LIVE = "live"  # listed and watching (or polling successfully)
    RELISTING = "relisting"  # the watch broke; data is kept but may be behind
    STALE = "stale"  # the API server stopped answering: data is kept, and may be behind by its age
    FORBIDDEN = "forbidden"  # 403: RBAC does not allow this read; the others keep working
    UNAVAILABLE = "unavailable"  # 404: the server does not serve this resource
    ERROR = "error"  # retrying after errors
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class SourceStatus:
    name: str
    state: SourceState = SourceState.CONNECTING
    message: str = ""  # one line for people, never a traceback
    last_ok: float | None = None  # last successful list, watch event or poll (epoch seconds)
    since: float | None = None  # when the state was entered
    stale_after: float | None = None  # data older than this many seconds is stale (polling sources)
    skipped: int = 0  # malformed objects seen (kept unparsed, logged)

    def age(self, now: float) -> float | None:
        return None if self.last_ok is None else max(0.0, now - self.last_ok)

    def stale(self, now: float) -> bool:
        """Data may be behind the cluster: not live, or a polling source that is late."""
        if self.state is not SourceState.LIVE:
            return True
        if self.stale_after is not None:
            age = self.age(now)
            return age is None or age > self.stale_after
        return False
