"""The simulated cluster's HTTP API server (stdlib ThreadingHTTPServer on loopback)."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kueuetop.sim.apiserver import codec, discovery, protobuf, routing
from kueuetop.sim.apiserver.auth import Authorizer, User, load_tokens, review
from kueuetop.sim.apiserver.faults import Faults
from kueuetop.sim.apiserver.hooks import ServerHooks
from kueuetop.sim.apiserver.resources import Ctx, Reply, Resources
from kueuetop.sim.apiserver.routing import Route
from kueuetop.sim.apiserver.status import ApiError, bad_request, from_store_error, not_found
from kueuetop.sim.apiserver.versions import KUEUE_VERSIONS, ServedVersions
from kueuetop.sim.apiserver.watch import WatchStream
from kueuetop.sim.storage.kinds import VISIBILITY_GROUP, get_kind
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, Watcher

_log = logging.getLogger(__name__)

MAX_BODY_BYTES = 3 * 1024 * 1024
PROM_TEXT = "text/plain; version=0.0.4; charset=utf-8"
DCGM_LABELS = (("app", "nvidia-dcgm-exporter"), ("app.kubernetes.io/name", "dcgm-exporter"))
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


class ApiServer:
    """Kubernetes-compatible REST API over an ObjectStore.

    tokens: None (no authentication: everyone is admin), a token file path, or a mapping
    token → {user, role}. faults: a Faults instance or its JSON settings. kueue_versions: the
    kueue.x-k8s.io versions offered, preferred first; `("v1beta1",)` answers like Kueue ≤ 0.14.
    """

    def __init__(self, store: ObjectStore, host: str = "127.0.0.1", port: int = 0,
                 tokens: str | os.PathLike[str] | dict[str, Any] | None = None,
                 faults: Faults | dict[str, Any] | None = None, hooks: ServerHooks | None = None,
                 bookmark_interval: float = 10.0, max_body_bytes: int = MAX_BODY_BYTES,
                 kueue_versions: tuple[str, ...] = KUEUE_VERSIONS, tls: ssl.SSLContext | None = None,
                 admin_token: str | None = None) -> None:
        self.store = store
        self.tls = tls
        self.served = ServedVersions(tuple(kueue_versions))
        self.host = host
        self.port = port
        user_map: dict[str, User] | None = None
        if tokens is not None:
            if isinstance(tokens, dict) and all(isinstance(v, User) for v in tokens.values()):
                user_map = dict(tokens)
            else:
                user_map = load_tokens(tokens)
        self.authz = Authorizer(user_map, admin_token)
        if isinstance(faults, Faults):
            self.faults = faults
        else:
            self.faults = Faults()
            if faults:
                self.faults.update(faults)
        self.hooks = hooks or ServerHooks()
        self.bookmark_interval = bookmark_interval
        self.max_body_bytes = max_body_bytes
        self.resources = Resources(store, self.hooks, self.served)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._watchers: set[Watcher] = set()
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> ApiServer:
        """Listen and serve in a background thread; returns once the socket is listening."""
        httpd = _HTTPServer((self.host, self.port), _Handler)
        if self.tls is not None:
            # The handshake happens in the request's thread on first read, not in accept():
            # a slow or broken client must not hold up every other connection.
            httpd.socket = self.tls.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        httpd.api = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"kueuetop-apiserver:{self.port}", daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://{self.host}:{self.port}"

    def stop(self) -> None:
        """Stop serving: end watch streams, close connections, release the port."""
        httpd = self._httpd
        if httpd is None:
            return
        self._httpd = None
        httpd.shutdown()
        self.drop_watches()
        # Let streams write their final chunk before the sockets are cut.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            with self._lock:
                if not self._watchers:
                    break
            time.sleep(0.01)
        with self._lock:
            conns = list(self._connections)
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drop_watches(self) -> int:
        """End every open watch stream now; returns how many were open."""
        with self._lock:
            ws = list(self._watchers)
        for w in ws:
            w.stop()
        return len(ws)

    def _register(self, w: Watcher) -> None:
        with self._lock:
            self._watchers.add(w)

    def _unregister(self, w: Watcher) -> None:
        with self._lock:
            self._watchers.discard(w)

    # ----------------------------------------------------------------- hooks
    def metrics_text(self) -> str:
        """Kueue's metrics, or none (an empty exposition) when no Kueue runs behind the server."""
        if self.hooks.metrics_text is not None:
            return self.hooks.metrics_text()
        return ""

    def dcgm_text(self, node_name: str | None) -> str:
        if self.hooks.dcgm_text is not None:
            return self.hooks.dcgm_text(node_name)
        return ""

    def pending_workloads(self, target: str | tuple[str, str], limit: int, offset: int) -> list[dict[str, Any]]:
        if self.hooks.pending_workloads is None:
            # No Kueue behind the server: kube-aggregator's answer for an APIService whose
            # backend is not available (staging/src/k8s.io/kube-aggregator, proxy handler).
            raise ApiError(503, "the server is currently unable to handle the request", "ServiceUnavailable")
        return self.hooks.pending_workloads(target, limit, offset)

    # ----------------------------------------------------------------- request handling
    def handle(self, h: _Handler, method: str) -> None:
        url = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        body_state: dict[str, Any] = {"read": False, "data": b""}

        def read_body() -> bytes:
            if not body_state["read"]:
                body_state["read"] = True
                body_state["data"] = h.read_request_body(self.max_body_bytes)
            return body_state["data"]

        warning: dict[str, str] = {}
        try:
            length = int(h.headers.get("Content-Length") or 0)
            if length > self.max_body_bytes:
                body_state["read"] = True
                h.discard_body(length, limit=4 * self.max_body_bytes)
                raise ApiError(413, f"Request entity too large: limit is {self.max_body_bytes}",
                               "RequestEntityTooLarge")
            user = self.authz.authenticate(h.headers.get("Authorization"))
            route = routing.parse(url.path, self.served)
            if route.kind is not None:
                dep = self.served.deprecation(route.kind, route.version)
                if dep:
                    warning = {"Warning": f'299 - "{dep}"'}
            if not (route.target == "special" and route.extra in ("faults", "healthz", "livez", "readyz")):
                self.faults.delay()
                injected = self.faults.injected_error()
                if injected is not None:
                    raise injected
            ctx = Ctx(method, route, query, h.headers.get("Content-Type"),
                      codec.Accept.parse(h.headers.get("Accept")), user, read_body,
                      user_agent=h.headers.get("User-Agent") or "")
            reply = self._dispatch(h, ctx)
            if reply is not None:
                if not body_state["read"]:
                    read_body()
                h.send_reply(reply)
        except ApiError as e:
            self._send_error(h, e, body_state, read_body, warning)
        except StoreError as e:
            self._send_error(h, from_store_error(e), body_state, read_body, warning)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
        except Exception as e:  # any bug answers 500, never kills the server
            _log.exception("request %s %s failed", method, url.path)
            self._send_error(h, ApiError(500, f"Internal error occurred: {type(e).__name__}: {e}",
                                         "InternalError"), body_state, read_body, warning)

    def _send_error(self, h: _Handler, e: ApiError, body_state: dict[str, Any], read_body: Any,
                    warning: dict[str, str]) -> None:
        if h.headers_sent:
            h.close_connection = True
            return
        if not body_state["read"]:
            try:
                read_body()
            except ApiError:
                h.close_connection = True
        headers = {**warning, **e.headers}
        try:
            h.send_reply(Reply(e.code, e.body(), headers=headers))
        except OSError:
            h.close_connection = True

    def _dispatch(self, h: _Handler, ctx: Ctx) -> Reply | None:
        r = ctx.route
        t = r.target
        if t in ("version", "api", "apis", "group", "resources", "openapi") and ctx.method != "GET":
            raise _method_not_allowed()
        if t == "version":
            return Reply(200, discovery.SERVER_VERSION)
        if t in ("api", "apis"):
            accept = (h.headers.get("Accept") or "").replace(" ", "")
            for variant, api_version in ((discovery.AGGREGATED_V2, "apidiscovery.k8s.io/v2"),
                                         (discovery.AGGREGATED_V2BETA1, "apidiscovery.k8s.io/v2beta1")):
                marker = variant.split(";", 1)[1]
                if marker in accept:
                    return Reply(200, discovery.aggregated(t == "api", api_version, self.served),
                                 content_type=variant)
            if t == "api":
                return Reply(200, discovery.api_versions(f"{self.host}:{self.port}"))
            return Reply(200, discovery.api_group_list(self.served))
        if t == "group":
            return Reply(200, discovery.api_group(r.group, self.served))
        if t == "resources":
            return Reply(200, discovery.resource_list(r.group, r.version, self.served))
        if t == "openapi":
            return self._openapi(r)
        if t == "special":
            return self._special(h, ctx)
        if t == "visibility":
            return self._visibility(ctx)
        if t == "proxy":
            return self._proxy(ctx)
        return self._resource(h, ctx)

    def _openapi(self, r: Route) -> Reply:
        if r.extra == "v3":
            return Reply(200, discovery.openapi_v3_root(self.served))
        if r.extra.startswith("v3/"):
            key = r.extra[3:]
            parts = key.split("/")
            if parts == ["api", "v1"]:
                return Reply(200, discovery.openapi_v3_doc("", "v1"))
            if (len(parts) == 3 and parts[0] == "apis" and parts[1] != VISIBILITY_GROUP
                    and discovery.resource_list(parts[1], parts[2], self.served) is not None):
                return Reply(200, discovery.openapi_v3_doc(parts[1], parts[2]))
        raise ApiError(404, "the server could not find the requested resource", "NotFound", {})

    def _special(self, h: _Handler, ctx: Ctx) -> Reply:
        name = ctx.route.extra
        if name in ("healthz", "livez", "readyz"):
            return Reply(200, b"ok", content_type="text/plain; charset=utf-8")
        if name == "metrics":
            return Reply(200, self.metrics_text().encode(), content_type=PROM_TEXT)
        if name == "dcgm/metrics":
            return Reply(200, self.dcgm_text(None).encode(), content_type=PROM_TEXT)
        if name == "faults":
            if ctx.method == "GET":
                return Reply(200, self.faults.to_json())
            if ctx.method != "POST":
                raise _method_not_allowed()
            if not self.authz.may_change_faults(ctx.user, h.headers.get("Authorization")):
                raise ApiError(403, f'User "{ctx.user.name}" cannot change faults', "Forbidden", {})
            body = codec.decode_body(ctx.read_body(), ctx.content_type or "application/json")
            if not isinstance(body, dict):
                raise bad_request("faults body must be a JSON object")
            self.faults.update(body)
            result = self.faults.to_json()
            if body.get("compactNow"):
                result["compactedAt"] = str(self.store.compact())
            if body.get("dropWatchesNow"):
                result["droppedWatches"] = self.drop_watches()
            return Reply(200, result)
        raise ApiError(404, "the server could not find the requested resource", "NotFound", {})

    def _visibility(self, ctx: Ctx) -> Reply:
        r = ctx.route
        if ctx.method != "GET":
            raise _method_not_allowed()
        self.authz.check(ctx.user, "get", VISIBILITY_GROUP, r.subresource, "pendingworkloads", r.namespace, r.name)
        try:
            limit = int(ctx.query.get("limit") or 1000)
            offset = int(ctx.query.get("offset") or 0)
        except ValueError:
            raise bad_request("limit and offset must be integers") from None
        limit = max(0, min(limit, 100000))
        target: str | tuple[str, str]
        if r.subresource == "clusterqueues":
            exists = self.store.try_get("kueue.x-k8s.io", "clusterqueues", None, r.name, copy=False)
            target = r.name
            singular = "clusterqueue"
        else:
            exists = self.store.try_get("kueue.x-k8s.io", "localqueues", r.namespace, r.name, copy=False)
            target = (r.namespace, r.name)
            singular = "localqueue"
        if exists is None:
            raise ApiError(404, f'{singular}.{VISIBILITY_GROUP} "{r.name}" not found', "NotFound",
                           {"name": r.name, "group": VISIBILITY_GROUP, "kind": singular})
        items = self.pending_workloads(target, limit, max(0, offset))
        return Reply(200, {"kind": "PendingWorkloadsSummary", "apiVersion": f"{VISIBILITY_GROUP}/{r.version}",
                           "metadata": {"creationTimestamp": None}, "items": items})

    def _proxy(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        verb = "get" if ctx.method == "GET" else _METHOD_VERBS.get(ctx.method, "delete")
        self.authz.check(ctx.user, verb, "", "pods", "proxy", r.namespace, r.name)
        pod = self.store.try_get("", "pods", r.namespace, r.name, copy=False)
        if pod is None:
            raise not_found(kind, r.name)
        labels = (pod.get("metadata") or {}).get("labels") or {}
        is_dcgm = any(labels.get(k) == v for k, v in DCGM_LABELS)
        if ctx.method == "GET" and is_dcgm and r.proxy_path.strip("/") == "metrics":
            node = (pod.get("spec") or {}).get("nodeName") or None
            return Reply(200, self.dcgm_text(node).encode(), content_type=PROM_TEXT)
        ip = (pod.get("status") or {}).get("podIP") or ""
        port = r.proxy_port or "80"
        raise ApiError(503, f"error trying to reach service: dial tcp {ip}:{port}: connect: connection refused",
                       "ServiceUnavailable")

    def _resource(self, h: _Handler, ctx: Ctx) -> Reply | None:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        m = ctx.method
        is_watch = r.watch_path or ctx.query.get("watch") in ("true", "1")
        if kind.plural == "selfsubjectaccessreviews":
            if m != "POST" or r.target != "collection":
                raise _method_not_allowed()
            raw = ctx.read_body()
            if (ctx.content_type or "").split(";")[0].strip() == protobuf.CONTENT_TYPE:
                # kubectl sends built-in kinds as protobuf (`kubectl auth can-i`).
                try:
                    body = protobuf.decode_self_subject_access_review(raw)
                except protobuf.ProtobufError as e:
                    raise bad_request(f"the body of the request could not be decoded: {e}") from None
            else:
                body = codec.decode_body(raw, ctx.content_type)
            if not isinstance(body, dict):
                raise bad_request("the body of the request must be a JSON object")
            return Reply(201, review(ctx.user, body))
        if m == "GET":
            if is_watch:
                verb = "watch"
            else:
                verb = "list" if r.target == "collection" else "get"
        elif m == "DELETE":
            verb = "deletecollection" if r.target == "collection" else "delete"
        elif m in _METHOD_VERBS:
            verb = _METHOD_VERBS[m]
        else:
            raise _method_not_allowed()
        self.authz.check(ctx.user, verb, kind.group, kind.plural, r.subresource, r.namespace,
                         r.name, kind.qualified)
        if verb == "watch":
            if r.target == "object":
                ctx.query["fieldSelector"] = ",".join(
                    x for x in (ctx.query.get("fieldSelector", ""), f"metadata.name={r.name}") if x)
                ctx.route = Route("collection", r.group, r.version, kind, r.namespace, watch_path=True)
            stream = WatchStream(ctx, self.store, self.resources, self.faults, self.bookmark_interval,
                                 self._register, self._unregister)
            stream.run(_ChunkedSink(h))
            return None
        if r.target == "collection":
            if verb == "list":
                return self.resources.list(ctx)
            if verb == "create":
                return self.resources.create(ctx)
            if verb == "deletecollection":
                return self.resources.delete_collection(ctx)
            raise _method_not_allowed()
        if verb == "get":
            return self.resources.get(ctx)
        if verb == "update":
            return self.resources.update(ctx)
        if verb == "patch":
            return self.resources.patch(ctx)
        if verb == "delete" and not r.subresource:
            return self.resources.delete(ctx)
        raise _method_not_allowed()


def _method_not_allowed() -> ApiError:
    return ApiError(405, "the server does not allow this method on the requested resource",
                    "MethodNotAllowed", {})


class _HTTPServer(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of new connections overflows the
    # accept queue and the kernel drops SYNs, which clients see as 1 s, 3 s, 7 s connect stalls
    # or timeouts. kube-apiserver (Go's net.Listen) asks for the kernel maximum (somaxconn);
    # 1024 is Go's fallback when somaxconn cannot be read, and Linux caps it at somaxconn anyway.
    request_queue_size = 1024
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    api: ApiServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops the connection or fails the TLS handshake is routine; the stdlib
        # default prints a traceback to stderr.
        _log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _ChunkedSink:
    def __init__(self, h: _Handler) -> None:
        self.h = h

    def start(self, content_type: str, headers: dict[str, str]) -> None:
        h = self.h
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache, private")
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.headers_sent = True
        h.wfile.flush()

    def send(self, data: bytes) -> None:
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()

    def end(self) -> None:
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    server_version = "kueuetop-sim"
    headers_sent = False

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.api._lock:
            self.server.api._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.api._lock:
            self.server.api._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s - %s", self.address_string(), format % args)

    def read_request_body(self, limit: int) -> bytes:
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = bytearray()
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                out += self.rfile.read(size)
                self.rfile.readline(3)
                if len(out) > limit:
                    self.close_connection = True
                    raise ApiError(413, f"Request entity too large: limit is {limit}", "RequestEntityTooLarge")
            return bytes(out)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def discard_body(self, length: int, limit: int) -> None:
        """Read and drop an oversized body so the client can read the error; past `limit`
        the connection is closed instead."""
        if length > limit:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 16))
            if not chunk:
                break
            length -= len(chunk)

    def send_reply(self, reply: Reply) -> None:
        body = reply.body
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = codec.dumps(body)
        self.send_response(reply.code)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.headers_sent = True
        self.wfile.write(data)

    def _do(self, method: str) -> None:
        self.headers_sent = False
        self.server.api.handle(self, method)

    def do_GET(self) -> None:
        self._do("GET")

    def do_POST(self) -> None:
        self._do("POST")

    def do_PUT(self) -> None:
        self._do("PUT")

    def do_PATCH(self) -> None:
        self._do("PATCH")

    def do_DELETE(self) -> None:
        self._do("DELETE")


__all__ = ["ApiServer", "get_kind"]
