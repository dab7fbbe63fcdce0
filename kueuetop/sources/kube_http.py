"""Raw JSON requests through the kubernetes client's ApiClient (auth, TLS, proxies, exec
plugins all as the client configures them), without its generated model classes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import urllib3
from kubernetes.client import ApiClient


class ApiError(Exception):
    """A non-2xx answer: status, the Status reason, the server's message, Retry-After."""

    def __init__(self, status: int, reason: str = "", message: str = "", retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {message}".strip())


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _error(resp: Any) -> ApiError:
    data = resp.read() if hasattr(resp, "read") else b""
    reason, message = str(getattr(resp, "reason", "") or ""), ""
    try:
        body = json.loads(data)
        if isinstance(body, dict):
            reason = str(body.get("reason") or reason)
            message = str(body.get("message") or "")
    except (ValueError, TypeError):
        message = data[:200].decode("utf-8", "replace") if isinstance(data, bytes) else ""
    return ApiError(int(resp.status), reason, message, _retry_after(resp.headers))


def request(api: ApiClient, path: str, query: dict[str, Any] | None = None,
            timeout: float | tuple[float, float] = 30.0) -> Any:
    """GET path → decoded JSON; ApiError for non-2xx; urllib3 errors for transport failures."""
    params = [(k, v) for k, v in (query or {}).items() if v is not None]
    method, url, headers, body, post = api.param_serialize(
        "GET", path, query_params=params, header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"])
    resp = api.call_api(method, url, headers, body, post, _request_timeout=timeout)
    if not 200 <= resp.status < 300:
        raise _error(resp)
    return json.loads(resp.read())


class Stream:
    """An open watch: iterate decoded events; `close()` from another thread ends it."""

    def __init__(self, api: ApiClient, path: str, query: dict[str, Any],
                 timeout: tuple[float, float]) -> None:
        params = [(k, v) for k, v in query.items() if v is not None]
        method, url, headers, body, post = api.param_serialize(
            "GET", path, query_params=params, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        self._resp = api.call_api(method, url, headers, body, post, _request_timeout=timeout)
        if not 200 <= self._resp.status < 300:
            raise _error(self._resp)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        raw: urllib3.BaseHTTPResponse = self._resp.response
        buf = b""
        for chunk in raw.stream(65536, decode_content=True):
            buf += chunk
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    break
                line, buf = buf[:nl], buf[nl + 1:]
                if line.strip():
                    yield json.loads(line)
        if buf.strip():
            yield json.loads(buf)

    def close(self) -> None:
        raw = self._resp.response
        try:
            shutdown = getattr(raw, "shutdown", None)
            if shutdown is not None:
                shutdown()  # urllib3 ≥ 2.3: unblocks a read in another thread
            raw.release_conn()
        except Exception:  # closing a half-dead connection may fail; it is being dropped anyway
            pass
