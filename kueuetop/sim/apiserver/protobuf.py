"""Just enough of Kubernetes' protobuf encoding to read a SelfSubjectAccessReview.

kubectl sends built-in kinds as protobuf (`application/vnd.kubernetes.protobuf`) and does not fall
back to JSON on 415, so `kubectl auth can-i` needs the server to read it, as kube-apiserver does.
The envelope is k8s.io/apimachinery runtime.Unknown after the magic prefix "k8s\\x00"
(typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4); `raw` is the object in the
field numbers of k8s.io/api authorization/v1 generated.proto: SelfSubjectAccessReview
{metadata = 1, spec = 2}, SelfSubjectAccessReviewSpec {resourceAttributes = 1,
nonResourceAttributes = 2}, ResourceAttributes {namespace = 1, verb = 2, group = 3, version = 4,
resource = 5, subresource = 6, name = 7}, NonResourceAttributes {path = 1, verb = 2}.
Answers go back as JSON, which kubectl accepts as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_RESOURCE_FIELDS = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource",
                    7: "name"}
_NON_RESOURCE_FIELDS = {1: "path", 2: "verb"}


class ProtobufError(ValueError):
    """The bytes are not the protobuf this server reads."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ProtobufError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, value) of one message: bytes for length-delimited fields, ints for varints;
    fixed-width fields are skipped (none of the fields read here use them)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield num, value
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ProtobufError("truncated field")
            yield num, buf[i:i + n]
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _strings(buf: bytes, names: dict[int, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for num, value in fields(buf):
        if num in names and isinstance(value, bytes):
            out[names[num]] = value.decode("utf-8", "replace")
    return out


def decode_self_subject_access_review(data: bytes) -> dict[str, Any]:
    """The review as the JSON body a client would have sent."""
    if not data.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    raw = b""
    for num, value in fields(data[len(MAGIC):]):
        if num == 2 and isinstance(value, bytes):
            raw = value
    spec: dict[str, Any] = {}
    for num, value in fields(raw):
        if num != 2 or not isinstance(value, bytes):
            continue
        for snum, svalue in fields(value):
            if snum == 1 and isinstance(svalue, bytes):
                spec["resourceAttributes"] = _strings(svalue, _RESOURCE_FIELDS)
            elif snum == 2 and isinstance(svalue, bytes):
                spec["nonResourceAttributes"] = _strings(svalue, _NON_RESOURCE_FIELDS)
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec}
