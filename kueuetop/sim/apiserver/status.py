"""Kubernetes `Status` bodies and the exception that carries one through a request."""

from __future__ import annotations

from typing import Any

from kueuetop.sim.storage.kinds import Kind
from kueuetop.sim.storage.objectstore import StoreError

REASON_BY_CODE = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
    413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


class ApiError(Exception):
    """Raised anywhere in request handling; the server answers it as a Status body."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
                 list_meta: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASON_BY_CODE.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}
        self.list_meta = list_meta  # Status.metadata (a ListMeta), e.g. an expired list's continue

    def body(self) -> dict[str, Any]:
        out = status_body(self.code, self.message, self.reason, self.details)
        if self.list_meta:
            out["metadata"] = dict(self.list_meta)
        return out


def status_body(code: int, message: str, reason: str = "", details: dict[str, Any] | None = None,
                success: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Success" if success else "Failure"}
    if message:
        out["message"] = message
    if reason:
        out["reason"] = reason
    if details:
        out["details"] = details
    out["code"] = code
    return out


def kind_details(kind: Kind | None, name: str = "") -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if kind is not None:
        if kind.group:
            d["group"] = kind.group
        d["kind"] = kind.plural
    return d


def from_store_error(e: StoreError) -> ApiError:
    details = kind_details(e.kind, e.name) or None
    if e.code == 410:
        # Watch/list expiry is reported with reason Expired (the client relists on it).
        return ApiError(410, e.message, "Expired")
    return ApiError(e.code, e.message, e.reason, details)


def not_found(kind: Kind, name: str) -> ApiError:
    return ApiError(404, f'{kind.qualified} "{name}" not found', "NotFound", kind_details(kind, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, message, "BadRequest")


def invalid(kind: Kind, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 with field causes; message format follows apimachinery's NewInvalid."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    kind_name = f"{kind.kind}.{kind.group}" if kind.group else kind.kind
    details: dict[str, Any] = {"name": name, "kind": kind.kind, "causes": causes}
    if kind.group:
        details["group"] = kind.group
    return ApiError(422, f'{kind_name} "{name}" is invalid: {summary}', "Invalid", details)


# apiserver storage/etcd3/errors.go inconsistentContinue.
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list.")


def expired_continue(inconsistent_token: str) -> ApiError:
    """A continue token whose revision was compacted: 410 Expired (apierrors.NewResourceExpired)
    carrying a token that resumes at the same key from the latest state (etcd3
    handleCompactedErrorForPaging encodes it with resourceVersion -1)."""
    return ApiError(410, INCONSISTENT_CONTINUE, "Expired", list_meta={"continue": inconsistent_token})


def parse_rv(raw: str | None) -> int | None:
    """A request's resourceVersion: None for unset, "" or "0" (any version will do)."""
    if raw in (None, "", "0"):
        return None
    try:
        return int(str(raw))
    except ValueError:
        raise bad_request(f'invalid resource version: "{raw}"') from None


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """A list or watch from a resourceVersion the server has not reached yet.

    kube-apiserver's watch cache waits up to 3 s for it (waitUntilFreshAndBlock), then answers 504
    with storage.NewTooLargeResourceVersionError: reason Timeout, a ResourceVersionTooLarge cause
    and Retry-After 1 (k8s.io/apiserver/pkg/storage/errors.go). client-go's reflector relists on it
    (reflector.go isTooLargeResourceVersionError), which is how a client notices a restarted
    server whose versions started over."""
    return ApiError(504, f"Too large resource version: {requested}, current: {current}", "Timeout",
                    details={"causes": [{"reason": "ResourceVersionTooLarge",
                                         "message": "Too large resource version"}],
                             "retryAfterSeconds": 1},
                    headers={"Retry-After": "1"})

