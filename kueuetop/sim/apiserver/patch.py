"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain dicts."""

from __future__ import annotations

import copy
from typing import Any

from kueuetop.sim.apiserver.status import ApiError


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f'the server rejected our request due to an error in our request: '
                            f'invalid JSON pointer "{path}"', "Invalid")
    return [_unescape(t) for t in path[1:].split("/")]


def _fail(msg: str) -> ApiError:
    # The real server answers a failed json patch with 422 and this wording.
    return ApiError(422, f"the server rejected our request due to an error in our request: {msg}",
                    "Invalid")


def _parent(doc: Any, tokens: list[str], path: str) -> tuple[Any, str]:
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise _fail(f"doc is missing path: \"{path}\": missing value")
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                cur = cur[int(t)]
            except (ValueError, IndexError):
                raise _fail(f"doc is missing path: \"{path}\": missing value") from None
        else:
            raise _fail(f"doc is missing path: \"{path}\": missing value")
    return cur, tokens[-1]


def _get(doc: Any, path: str) -> Any:
    tokens = _split(path)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise _fail(f"doc is missing path: \"{path}\": missing value")
        return parent[last]
    if isinstance(parent, list):
        try:
            return parent[int(last)]
        except (ValueError, IndexError):
            raise _fail(f"doc is missing path: \"{path}\": missing value") from None
    raise _fail(f"doc is missing path: \"{path}\": missing value")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _split(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError:
                raise _fail(f"add operation does not apply: doc is missing path: \"{path}\"") from None
            if i < 0 or i > len(parent):
                raise _fail(f"add operation does not apply: doc is missing path: \"{path}\"")
            parent.insert(i, value)
    else:
        raise _fail(f"add operation does not apply: doc is missing path: \"{path}\"")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _split(path)
    if not tokens:
        raise _fail("unable to remove the whole document")
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise _fail(f"remove operation does not apply: doc is missing path: \"{path}\"")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        try:
            return doc, parent.pop(int(last))
        except (ValueError, IndexError):
            raise _fail(f"remove operation does not apply: doc is missing path: \"{path}\"") from None
    raise _fail(f"remove operation does not apply: doc is missing path: \"{path}\"")


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 with add, remove, replace, move, copy and test."""
    if not isinstance(ops, list):
        raise ApiError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                       "BadRequest")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise _fail("unexpected kind of operation")
        kind, path = op["op"], op["path"]
        if not isinstance(path, str):
            raise _fail("path must be a string")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc, _ = _remove(doc, path) if _split(path) else (doc, None)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            src = op.get("from")
            if not isinstance(src, str):
                raise _fail(f"{kind} operation requires from")
            value = copy.deepcopy(_get(doc, src))
            if kind == "move":
                doc, _ = _remove(doc, src)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise _fail(f'testing value {path} failed: test failed')
        else:
            raise _fail(f"Unexpected kind: {kind}")
    return doc
