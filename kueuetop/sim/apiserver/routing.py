"""Parse request paths into what they address."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from kueuetop.sim.apiserver.status import ApiError
from kueuetop.sim.apiserver.versions import ALL_VERSIONS, ServedVersions
from kueuetop.sim.storage import kinds as K
from kueuetop.sim.storage.kinds import Kind


@dataclass
class Route:
    """What a path addresses. `target` is one of: version, api, apis, group, resources,
    object, collection, visibility, proxy, openapi, special."""

    target: str
    group: str = ""
    version: str = ""
    kind: Kind | None = None
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    watch_path: bool = False       # legacy /watch/ prefix
    proxy_port: str = ""
    proxy_path: str = ""
    extra: str = ""                # special endpoint name / openapi key


def _not_found(path: str) -> ApiError:
    return ApiError(404, "the server could not find the requested resource", "NotFound", {})


def parse(path: str, served: ServedVersions = ALL_VERSIONS) -> Route:
    """Route for a path; a group or version this server does not offer is 404, as on a real
    server without that CRD version."""
    raw_segments = [s for s in path.split("/") if s != ""]
    segs = [unquote(s) for s in raw_segments]
    if not segs:
        return Route("special", extra="root")
    head = segs[0]
    if head == "version" and len(segs) == 1:
        return Route("version")
    if head in ("healthz", "livez", "readyz", "metrics") and len(segs) == 1:
        return Route("special", extra=head)
    if head == "openapi":
        return Route("openapi", extra="/".join(segs[1:]))
    if head == "kueuetop" and len(segs) >= 3 and segs[1] == "v1":
        return Route("special", extra="/".join(segs[2:]))
    if head == "api":
        if len(segs) == 1:
            return Route("api")
        if segs[1] != "v1":
            raise _not_found(path)
        if len(segs) == 2:
            return Route("resources", "", "v1")
        return _parse_resource("", "v1", segs[2:], path)
    if head == "apis":
        if len(segs) == 1:
            return Route("apis")
        group = segs[1]
        if not served.versions(group):
            raise _not_found(path)
        if len(segs) == 2:
            return Route("group", group)
        version = segs[2]
        if not served.serves(group, version):
            raise _not_found(path)
        if len(segs) == 3:
            return Route("resources", group, version)
        if group == K.VISIBILITY_GROUP:
            return _parse_visibility(version, segs[3:], path)
        return _parse_resource(group, version, segs[3:], path, served)
    raise _not_found(path)


def _parse_visibility(version: str, rest: list[str], path: str) -> Route:
    if len(rest) == 3 and rest[0] == "clusterqueues" and rest[2] == "pendingworkloads":
        return Route("visibility", K.VISIBILITY_GROUP, version, name=rest[1], subresource="clusterqueues")
    if (len(rest) == 5 and rest[0] == "namespaces" and rest[2] == "localqueues"
            and rest[4] == "pendingworkloads"):
        return Route("visibility", K.VISIBILITY_GROUP, version, namespace=rest[1], name=rest[3],
                     subresource="localqueues")
    raise _not_found(path)


def _parse_resource(group: str, version: str, rest: list[str], path: str,
                    served: ServedVersions = ALL_VERSIONS) -> Route:
    watch = False
    if rest and rest[0] == "watch":
        watch = True
        rest = rest[1:]
    if not rest:
        raise _not_found(path)
    namespace = ""
    # /api/v1/namespaces/{name}[/status|/finalize] addresses the Namespace itself.
    if rest[0] == "namespaces" and len(rest) >= 3 and not (
            group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace = rest[1]
        rest = rest[2:]
    plural = rest[0]
    kind = served.find_kind(group, version, plural)
    if kind is None:
        raise _not_found(path)
    if namespace and not kind.namespaced:
        raise _not_found(path)
    if len(rest) == 1:
        return Route("collection", group, version, kind, namespace, watch_path=watch)
    name = rest[1]
    if len(rest) == 2:
        return Route("object", group, version, kind, namespace, name, watch_path=watch)
    sub = rest[2]
    if sub == "proxy" and kind.key == ("", "pods"):
        pod, _, port = name.partition(":")
        return Route("proxy", group, version, kind, namespace, pod, "proxy", proxy_port=port,
                     proxy_path="/".join(rest[3:]))
    if len(rest) == 3 and ((sub == "status" and kind.status_subresource) or
                           (sub == "finalize" and kind.plural == "namespaces")):
        return Route("object", group, version, kind, namespace, name, sub, watch_path=watch)
    raise _not_found(path)
