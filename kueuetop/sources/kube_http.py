"""Raw JSON requests through the kubernetes client's ApiClient (auth, TLS, proxies, exec
plugins all as the client configures them), without its generated model classes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes.client import ApiClient


class ApiError(Exception):
    """A non-2xx answer: status, the Status reason, the server's message, Retry-After."""

    def __init__(self, status: int, reason: str = "", message: str = "", retry_after: float | None = None,
                 causes: tuple[str, ...] = ()) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.causes = causes  # details.causes[].reason of the Status
        super().__init__(f"{status} {reason}: {message}".strip())

    @property
    def too_large_resource_version(self) -> bool:
        """The server has not reached the version asked for: it restarted with versions that
        started over, or it is behind. client-go's reflector relists on it (reflector.go
        isTooLargeResourceVersionError): the cause, or the message of servers that give none."""
        return "ResourceVersionTooLarge" in self.causes or (
            self.status == 504 and "too large resource version" in self.message.lower())


def status_causes(body: Any) -> tuple[str, ...]:
    details = body.get("details") if isinstance(body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    return tuple(str(c.get("reason")) for c in causes or () if isinstance(c, dict) and c.get("reason"))


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _error(resp: Any) -> ApiError:
    data = resp.read() if hasattr(resp, "read") else b""
    return api_error(int(resp.status), str(getattr(resp, "reason", "") or ""), data, resp.headers)


def api_error(status: int, reason: str, data: bytes, headers: Any) -> ApiError:
    """The ApiError a non-2xx answer stands for: its Status body's reason, message and causes."""
    message: str = ""
    causes: tuple[str, ...] = ()
    try:
        body = json.loads(data)
        if isinstance(body, dict):
            reason = str(body.get("reason") or reason)
            message = str(body.get("message") or "")
            causes = status_causes(body)
    except (ValueError, TypeError):
        message = data[:200].decode("utf-8", "replace") if isinstance(data, bytes) else ""
    return ApiError(status, reason, message, _retry_after(headers), causes)


def _send(api: ApiClient, path: str, query: dict[str, Any] | None,
          timeout: float | tuple[float, float]) -> urllib3.BaseHTTPResponse:
    """One GET through the ApiClient's own connection pool (its TLS, client certificates and
    proxy) with its bearer token, refreshed by exec plugins, as every client version builds it.

    Built from the client's long-standing parts (`configuration.host`, `auth_settings()`,
    `default_headers`, `rest_client.pool_manager`), not its request-building helpers, which the
    generator renames between releases (`param_serialize` appeared in 37).
    """
    cfg = api.configuration
    params = [(k, v if not isinstance(v, bool) else str(v).lower()) for k, v in (query or {}).items()
              if v is not None]
    url = cfg.host.rstrip("/") + path + ("?" + urlencode(params) if params else "")
    headers = {**api.default_headers, "Accept": "application/json"}
    auth = cfg.auth_settings().get("BearerToken")
    if auth and auth.get("value"):
        headers[auth["key"]] = auth["value"]
    if isinstance(timeout, tuple):
        to = urllib3.Timeout(connect=timeout[0], read=timeout[1])
    else:
        to = urllib3.Timeout(total=timeout)
    return api.rest_client.pool_manager.request("GET", url, headers=headers, preload_content=False, timeout=to)


def request_bytes(api: ApiClient, path: str, query: dict[str, Any] | None = None,
                  timeout: float | tuple[float, float] = 30.0, limit: int | None = None) -> bytes:
    """GET path → the raw body (at most `limit` + 1 bytes read, so a caller can tell it was cut);
    ApiError for non-2xx; urllib3 errors for transport failures."""
    resp = _send(api, path, query, timeout)
    try:
        if not 200 <= resp.status < 300:
            raise _error(resp)
        return resp.read(limit + 1) if limit is not None else resp.read()
    finally:
        resp.release_conn()


def request(api: ApiClient, path: str, query: dict[str, Any] | None = None,
            timeout: float | tuple[float, float] = 30.0) -> Any:
    """GET path → decoded JSON; ApiError for non-2xx; urllib3 errors for transport failures."""
    resp = _send(api, path, query, timeout)
    try:
        if not 200 <= resp.status < 300:
            raise _error(resp)
        return json.loads(resp.read())
    finally:
        resp.release_conn()


class Stream:
    """An open watch: iterate decoded events; `close()` from another thread ends it."""

    def __init__(self, api: ApiClient, path: str, query: dict[str, Any],
                 timeout: tuple[float, float]) -> None:
        self._closed = False
        self._raw = _send(api, path, query, timeout)
        if not 200 <= self._raw.status < 300:
            err = _error(self._raw)
            self._raw.release_conn()
            raise err

    def __iter__(self) -> Iterator[dict[str, Any]]:
        raw = self._raw
        buf = b""
        chunks = raw.stream(65536, decode_content=True)
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except AttributeError as e:
                if not self._closed:
                    raise
                # urllib3 < 2.3 has no shutdown(): `close()` from another thread drops the
                # file object under a read in progress, which then fails on None. The stream
                # ended as a cut connection does, and is resumed like one.
                raise urllib3.exceptions.ProtocolError("watch closed during a read") from e
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
        self._closed = True
        raw = self._raw
        try:
            shutdown = getattr(raw, "shutdown", None)
            if shutdown is not None:
                shutdown()  # urllib3 ≥ 2.3: unblocks a read in another thread
            raw.release_conn()
        except Exception:  # closing a half-dead connection may fail; it is being dropped anyway
            pass
