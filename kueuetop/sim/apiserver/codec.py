"""Request bodies in, response bodies out: content negotiation and version conversion."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import yaml

from kueuetop.kueue.api_versions import to_v1beta1, to_v1beta2
from kueuetop.sim.apiserver.status import ApiError, bad_request
from kueuetop.sim.storage.kinds import KUEUE_GROUP, Kind

Obj = dict[str, Any]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
BODY_TYPES = (JSON, "application/yaml", "text/yaml", "application/x-yaml")


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def decode_body(raw: bytes, content_type: str | None, *, patch: bool = False) -> Any:
    mt = media_type(content_type)
    if patch:
        if mt not in PATCH_TYPES:
            raise ApiError(415, f"the body of the request was in an unknown format - accepted media types "
                                f"include: {', '.join(PATCH_TYPES)}", "UnsupportedMediaType")
    elif mt and mt not in BODY_TYPES:
        raise ApiError(415, f'the body of the request was in an unknown format - accepted media types '
                            f'include: {", ".join(BODY_TYPES)}', "UnsupportedMediaType")
    if not raw.strip():
        raise bad_request("the body of the request was empty")
    text = raw.decode("utf-8", errors="replace")
    if mt in ("application/yaml", "text/yaml", "application/x-yaml", APPLY_PATCH):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise bad_request(f"error decoding YAML: {str(e).splitlines()[0]}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise bad_request(f"couldn't get version/kind; json parse error: {e.msg}") from None


def dumps(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Accept:
    table: bool = False
    partial: bool = False          # PartialObjectMetadata(List)

    @staticmethod
    def parse(header: str | None) -> Accept:
        h = (header or "").replace(" ", "")
        for part in h.split(","):
            params = dict(p.split("=", 1) for p in part.split(";")[1:] if "=" in p)
            if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
                return Accept(table=True)
            if params.get("as", "").startswith("PartialObjectMetadata") and params.get("g") == "meta.k8s.io":
                return Accept(partial=True)
            if part.split(";")[0] in ("application/json", "*/*", "application/*"):
                return Accept()
        return Accept()


def is_kueue(kind: Kind) -> bool:
    return kind.group == KUEUE_GROUP


def to_version(kind: Kind, version: str, obj: Obj) -> Obj:
    """Stored object → the request's version."""
    if is_kueue(kind) and version == "v1beta1":
        return to_v1beta1(obj)
    return obj


def from_version(kind: Kind, version: str, obj: Obj) -> Obj:
    """Request body (in the request's version) → stored shape."""
    if is_kueue(kind):
        obj = dict(obj)
        obj["apiVersion"] = kind.api_version(version)
        return to_v1beta2(obj)
    return obj


def check_type_meta(kind: Kind, version: str, obj: Any) -> Obj:
    """Fill missing apiVersion/kind; refuse a body of another type (400)."""
    if not isinstance(obj, dict):
        raise bad_request("the body of the request must be a JSON object")
    expected = kind.api_version(version)
    api_version = obj.get("apiVersion")
    if api_version and api_version != expected:
        raise bad_request(f"the API version in the data ({api_version}) does not match the expected API "
                          f"version ({expected})")
    if obj.get("kind") and obj["kind"] != kind.kind:
        raise bad_request(f"the kind in the data ({obj['kind']}) does not match the expected kind "
                          f"({kind.kind})")
    obj["apiVersion"] = expected
    obj["kind"] = kind.kind
    if obj.get("metadata") is None:
        obj["metadata"] = {}
    if not isinstance(obj["metadata"], dict):
        raise bad_request("metadata must be an object")
    return obj


def encode_continue(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(key)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        pad = "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(token + pad))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except Exception:
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                          "(version meta.k8s.io/v1)") from None
