"""GET requests to a Kubernetes API server on an asyncio loop (the shared watch loop of several
clusters, sources/watch_loop.py), with the TLS and credentials the `kubernetes` client's
`Configuration` holds: the kubeconfig's CA (file or data), client certificate and key, the
insecure flag, tls-server-name, and the Authorization header its `auth_settings()` gives
(bearer or basic; exec-plugin and OIDC tokens refreshed by its `refresh_api_key_hook`, which may
run a plugin, so it runs off the loop). Proxies are not spoken here: `Endpoint.for_client`
returns None for a configuration with one, and the caller keeps that cluster on its threads.

Plain HTTP/1.1, one connection per request (`Connection: close`), identity encoding; bodies
framed by Content-Length, chunked, or the end of the connection. Every connect and every read
is bounded, so a silent server costs its own timeout and never the loop.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from kubernetes.client import ApiClient

from kueuetop.sources.kube_http import api_error

HEAD_LIMIT = 1 << 20  # status line + headers, and one chunk-size line
ERROR_BODY_LIMIT = 1 << 16  # what is read of a non-2xx answer


def _ssl_context(cfg: Any) -> ssl.SSLContext:
    """As rest.RESTClientObject builds urllib3's pool: CA file/data, client cert, verify flag."""
    data = cfg.ca_cert_data
    if isinstance(data, bytes):
        data = data.decode()
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None, cadata=data or None)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif cfg.assert_hostname is False:
        ctx.check_hostname = False
    return ctx


@dataclass
class Endpoint:
    """Where and how to reach one cluster's API server."""

    api: ApiClient
    host: str
    port: int
    base: str  # path prefix of the server URL ("" for most)
    ssl: ssl.SSLContext | None
    server_hostname: str | None

    @classmethod
    def for_client(cls, api: ApiClient) -> Endpoint | None:
        """The endpoint of a configured client; None when it goes through a proxy."""
        cfg = api.configuration
        if getattr(cfg, "proxy", None):
            return None
        url = urlsplit(cfg.host)
        https = url.scheme == "https"
        if url.scheme not in ("http", "https") or not url.hostname:
            return None
        name = cfg.tls_server_name or (cfg.assert_hostname if isinstance(cfg.assert_hostname, str) else None)
        return cls(api, url.hostname, url.port or (443 if https else 80), url.path.rstrip("/"),
                   _ssl_context(cfg) if https else None, (name or url.hostname) if https else None)

    async def headers(self, timeout: float) -> dict[str, str]:
        """The client's headers now. Its refresh hook (kubeconfig loader: re-reads the token, runs
        an exec plugin once it has expired) may block, so it runs on the loop's small executor,
        and a hung plugin costs its own cluster `timeout`, never the loop."""
        cfg = self.api.configuration
        if cfg.refresh_api_key_hook is not None:
            async with asyncio.timeout(timeout):
                auth = await asyncio.get_running_loop().run_in_executor(None, cfg.auth_settings)
        else:
            auth = cfg.auth_settings()
        out = {**self.api.default_headers, "Accept": "application/json"}
        bearer = auth.get("BearerToken")
        if bearer and bearer.get("value"):
            out[bearer["key"]] = bearer["value"]
        return out


class Response:
    """A 2xx answer whose body has not been read yet."""

    def __init__(self, status: int, headers: dict[str, str], reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, read_timeout: float) -> None:
        self.status = status
        self.headers = headers
        self._reader, self._writer = reader, writer
        self.read_timeout = read_timeout
        self.bytes_read = 0

    async def _read(self, n: int) -> bytes:
        async with asyncio.timeout(self.read_timeout):
            data = await self._reader.read(n)
        self.bytes_read += len(data)
        return data

    async def _exactly(self, n: int) -> bytes:
        try:
            async with asyncio.timeout(self.read_timeout):
                data = await self._reader.readexactly(n)
        except asyncio.IncompleteReadError:
            raise ConnectionResetError("the connection closed in the middle of an answer") from None
        self.bytes_read += n
        return data

    async def _line(self) -> bytes:
        try:
            async with asyncio.timeout(self.read_timeout):
                line = await self._reader.readuntil(b"\r\n")
        except asyncio.IncompleteReadError:
            raise ConnectionResetError("the connection closed in the middle of an answer") from None
        except asyncio.LimitOverrunError:
            raise ValueError("an HTTP line too long") from None
        self.bytes_read += len(line)
        return line

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, de-chunked."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                try:
                    size = int(((await self._line()).split(b";")[0]).strip(), 16)
                except ValueError:
                    raise ValueError("a malformed chunk size") from None
                if size == 0:
                    while (await self._line()) != b"\r\n":  # trailers
                        pass
                    return
                yield await self._exactly(size)
                await self._exactly(2)
        elif "content-length" in self.headers:
            left = int(self.headers["content-length"])
            while left > 0:
                data = await self._read(min(left, 1 << 16))
                if not data:
                    raise ConnectionResetError("the connection closed in the middle of an answer")
                left -= len(data)
                yield data
        else:
            while data := await self._read(1 << 16):
                yield data

    async def body(self, limit: int | None = None) -> bytes:
        parts: list[bytes] = []
        size = 0
        async for chunk in self.chunks():
            parts.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                break
        return b"".join(parts)

    async def json(self) -> Any:
        try:
            return json.loads(await self.body())
        finally:
            self.abort()

    async def events(self) -> AsyncIterator[Any]:
        """A watch: one decoded JSON document per line."""
        buf = b""
        async for chunk in self.chunks():
            buf += chunk
            while (nl := buf.find(b"\n")) >= 0:
                line, buf = buf[:nl], buf[nl + 1:]
                if line.strip():
                    yield json.loads(line)
        if buf.strip():
            yield json.loads(buf)

    def abort(self) -> None:
        """Drop the connection (on the loop's thread): a read waiting on it ends."""
        self._writer.transport.abort()


async def get(ep: Endpoint, path: str, query: dict[str, Any] | None, *, connect_timeout: float,
              read_timeout: float) -> Response:
    """GET path → the open 2xx Response; ApiError for non-2xx; OSError (timeouts included) and
    ValueError for transport and framing problems."""
    params = [(k, v if not isinstance(v, bool) else str(v).lower()) for k, v in (query or {}).items()
              if v is not None]
    target = ep.base + path + ("?" + urlencode(params) if params else "")
    headers = await ep.headers(connect_timeout)
    async with asyncio.timeout(connect_timeout):
        reader, writer = await asyncio.open_connection(ep.host, ep.port, ssl=ep.ssl, limit=HEAD_LIMIT,
                                                       server_hostname=ep.server_hostname)
    try:
        host = ep.host if ":" not in ep.host else f"[{ep.host}]"
        lines = [f"GET {target} HTTP/1.1", f"Host: {host}:{ep.port}", "Connection: close",
                 "Accept-Encoding: identity", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        async with asyncio.timeout(read_timeout):
            await writer.drain()
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                raise ConnectionResetError("the server closed the connection without an answer") from None
            except asyncio.LimitOverrunError:
                raise ValueError("the answer's headers are too long") from None
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
        status, reason = int(parts[1]), parts[2] if len(parts) > 2 else ""
        fields: dict[str, str] = {}
        for h in header_lines:
            name, sep, value = h.partition(":")
            if sep:
                fields[name.strip().lower()] = value.strip()
        resp = Response(status, fields, reader, writer, read_timeout)
        resp.bytes_read = len(head)
        if not 200 <= status < 300:
            data = await resp.body(ERROR_BODY_LIMIT)
            raise api_error(status, reason, data, {"Retry-After": fields.get("retry-after")})
        return resp
    except BaseException:
        writer.transport.abort()
        raise
