"""REST verbs on stored kinds: get, list, create, update, patch, delete (+ status)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kueuetop.sim.apiserver import codec, field_managers, selectors, tables
from kueuetop.sim.apiserver.auth import User
from kueuetop.sim.apiserver.defaults import apply_defaults, prepare_for_create
from kueuetop.sim.apiserver.hooks import ServerHooks, WriteRequest
from kueuetop.sim.apiserver.patch import json_patch, merge_patch
from kueuetop.sim.apiserver.routing import Route
from kueuetop.sim.apiserver.status import (
    ApiError,
    bad_request,
    expired_continue,
    invalid,
    not_found,
    parse_rv,
    too_large_resource_version,
)
from kueuetop.sim.apiserver.validation import validate
from kueuetop.sim.apiserver.versions import ALL_VERSIONS, ServedVersions
from kueuetop.sim.storage.kinds import Kind
from kueuetop.sim.storage.objectstore import Conflict, Expired, NotFound, ObjectStore

Obj = dict[str, Any]


@dataclass
class Reply:
    code: int
    body: Any
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Ctx:
    method: str
    route: Route
    query: dict[str, str]
    content_type: str | None
    accept: codec.Accept
    user: User
    read_body: Callable[[], bytes]
    user_agent: str = ""


def dry_run(ctx: Ctx, body: Obj | None = None) -> bool:
    values = ctx.query.get("dryRun", "")
    if values == "All":
        return True
    if values:
        raise bad_request(f'Invalid dryRun value: "{values}"; supported values: "All"')
    if body and isinstance(body.get("dryRun"), list):
        return "All" in body["dryRun"]
    return False


class Resources:
    def __init__(self, store: ObjectStore, hooks: ServerHooks, served: ServedVersions = ALL_VERSIONS) -> None:
        self.store = store
        self.hooks = hooks
        self.served = served

    # ----------------------------------------------------------------- helpers
    def _present(self, ctx: Ctx, kind: Kind, obj: Obj) -> Any:
        out = codec.to_version(kind, ctx.route.version, obj)
        if ctx.accept.table:
            return tables.table(kind, ctx.route.version, [out], self.store.now(),
                                resource_version=out.get("metadata", {}).get("resourceVersion", ""),
                                include_object=ctx.query.get("includeObject", "Metadata"))
        if ctx.accept.partial:
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": out.get("metadata", {})}
        return out

    def _admit(self, ctx: Ctx, verb: str, kind: Kind, obj: Obj | None, old: Obj | None,
               is_dry_run: bool) -> None:
        if self.hooks.on_write is None:
            return
        meta = (obj or old or {}).get("metadata", {})
        self.hooks.on_write(WriteRequest(verb, kind, ctx.route.subresource, meta.get("namespace", ""),
                                         meta.get("name", ""), obj, old, ctx.user.name, is_dry_run))

    def _validate(self, ctx: Ctx, kind: Kind, obj: Obj, old: Obj | None) -> None:
        if ctx.route.subresource == "status":
            return
        causes = validate(kind, obj, old, ctx.route.version)
        if causes:
            name = obj.get("metadata", {}).get("name") or ""
            raise invalid(kind, name, causes)

    def _require_namespace(self, kind: Kind, ns: str) -> None:
        if kind.namespaced and self.store.try_get("", "namespaces", None, ns, copy=False) is None:
            raise ApiError(404, f'namespaces "{ns}" not found', "NotFound", {"name": ns, "kind": "namespaces"})

    def _warnings(self, ctx: Ctx, kind: Kind) -> dict[str, str]:
        w = self.served.deprecation(kind, ctx.route.version)
        return {"Warning": f'299 - "{w}"'} if w else {}

    # ----------------------------------------------------------------- get / list
    def get(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        obj = self.store.get(kind.group, kind.plural, r.namespace, r.name, copy=False)
        return Reply(200, self._present(ctx, kind, obj), headers=self._warnings(ctx, kind))

    def _filters(self, ctx: Ctx, kind: Kind) -> tuple[Callable[[Obj], bool] | None, set[tuple[str, str]] | None]:
        labels = selectors.parse_label_selector(ctx.query.get("labelSelector"))
        fields = selectors.parse_field_selector(ctx.query.get("fieldSelector"), kind)
        candidates = None
        for f in fields:
            if f.op == "=":
                keys = self.store.index_keys(kind.group, kind.plural, f.field, f.value)
                if keys is not None:
                    candidates = keys if candidates is None else candidates & keys
        if not labels and not fields:
            return None, candidates

        def pred(o: Obj) -> bool:
            return selectors.labels_match(labels, o) and selectors.fields_match(fields, o)

        return pred, candidates

    def list(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        pred, candidates = self._filters(ctx, kind)
        try:
            limit = int(ctx.query.get("limit") or 0)
        except ValueError:
            raise bad_request(f"invalid limit: {ctx.query.get('limit')}") from None
        wanted = parse_rv(ctx.query.get("resourceVersion"))
        if wanted is not None and wanted > self.store.resource_version:
            raise too_large_resource_version(wanted, self.store.resource_version)
        after = None
        at = None
        token = ctx.query.get("continue")
        if token:
            token_rv, after = codec.decode_continue(token)
            # -1: the inconsistent token of an expired list, resumed from the latest state.
            at = None if token_rv == -1 else token_rv
        try:
            items, next_key, rv, remaining = self.store.list_chunk(
                kind.group, kind.plural, r.namespace or None, limit=max(0, limit), at=at, after=after,
                predicate=pred, candidates=candidates)
        except Expired:
            assert after is not None
            raise expired_continue(codec.encode_continue(-1, after)) from None
        meta: Obj = {"resourceVersion": str(rv)}
        cont = codec.encode_continue(rv, next_key) if next_key else ""
        if cont:
            meta["continue"] = cont
            if pred is None and candidates is None:
                # As kube-apiserver: how many items follow this page, only for lists without
                # label or field selectors (with them the server can't know without filtering).
                meta["remainingItemCount"] = remaining
        out_items = [codec.to_version(kind, r.version, o) for o in items]
        headers = self._warnings(ctx, kind)
        if ctx.accept.table:
            return Reply(200, tables.table(kind, r.version, out_items, self.store.now(),
                                           resource_version=str(rv), continue_token=cont,
                                           include_object=ctx.query.get("includeObject", "Metadata")),
                         headers=headers)
        if ctx.accept.partial:
            return Reply(200, {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                               "metadata": meta,
                               "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                          "metadata": o.get("metadata", {})} for o in out_items]},
                         headers=headers)
        return Reply(200, {"kind": kind.list_kind, "apiVersion": kind.api_version(r.version),
                           "metadata": meta, "items": out_items}, headers=headers)

    # ----------------------------------------------------------------- create
    def create(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        body = codec.check_type_meta(kind, r.version, codec.decode_body(ctx.read_body(), ctx.content_type))
        meta = body["metadata"]
        if kind.namespaced:
            if meta.get("namespace") and r.namespace and meta["namespace"] != r.namespace:
                raise bad_request("the namespace of the provided object does not match the namespace sent on "
                                  "the request")
            meta["namespace"] = r.namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        obj = codec.from_version(kind, r.version, body)
        obj = copy.deepcopy(obj)
        for f in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            obj["metadata"].pop(f, None)
        prepare_for_create(kind, obj)
        apply_defaults(kind, obj)
        field_managers.record_update(None, obj, field_managers.manager_from(ctx.query, ctx.user_agent),
                                     kind.api_version(r.version), now=self.store.now())
        self._validate(ctx, kind, obj, None)
        if kind.namespaced:
            self._require_namespace(kind, obj["metadata"]["namespace"])
        is_dry = dry_run(ctx)
        self._admit(ctx, "create", kind, obj, None, is_dry)
        created = self.store.create(kind.group, kind.plural, obj, dry_run=is_dry)
        return Reply(201, self._present(ctx, kind, created), headers=self._warnings(ctx, kind))

    # ----------------------------------------------------------------- update
    def update(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        body = codec.check_type_meta(kind, r.version, codec.decode_body(ctx.read_body(), ctx.content_type))
        meta = body["metadata"]
        if meta.get("name") and meta["name"] != r.name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                              f"({r.name})")
        meta["name"] = r.name
        if kind.namespaced:
            if meta.get("namespace") and meta["namespace"] != r.namespace:
                raise bad_request("the namespace of the provided object does not match the namespace sent on "
                                  "the request")
            meta["namespace"] = r.namespace
        obj = codec.from_version(kind, r.version, body)
        return self._store_update(ctx, kind, obj, "update")

    def _store_update(self, ctx: Ctx, kind: Kind, obj: Obj, verb: str, applied: bool = False) -> Reply:
        r = ctx.route
        old = self.store.get(kind.group, kind.plural, r.namespace, r.name, copy=False)
        if r.subresource != "status":
            apply_defaults(kind, obj)
            if not applied:  # an apply computed its own ownership (field_managers.apply)
                field_managers.record_update(old, obj, field_managers.manager_from(ctx.query, ctx.user_agent),
                                             kind.api_version(r.version), now=self.store.now())
            probe = copy.deepcopy(obj)
            if kind.status_subresource:
                # Validation sees the status the stored object will keep.
                probe.pop("status", None)
                if "status" in old:
                    probe["status"] = old["status"]
            self._validate(ctx, kind, probe, old)
        is_dry = dry_run(ctx)
        self._admit(ctx, verb, kind, obj, old, is_dry)
        if r.subresource == "status":
            stored = self.store.update_status(kind.group, kind.plural, obj, dry_run=is_dry)
        else:
            stored = self.store.update(kind.group, kind.plural, obj, dry_run=is_dry)
        return Reply(200, self._present(ctx, kind, stored), headers=self._warnings(ctx, kind))

    # ----------------------------------------------------------------- patch
    def patch(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        mt = codec.media_type(ctx.content_type)
        patch = codec.decode_body(ctx.read_body(), ctx.content_type, patch=True)
        if mt == codec.JSON_PATCH:
            if not isinstance(patch, list):
                raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        elif not isinstance(patch, dict):
            raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
        if mt == codec.APPLY_PATCH:
            if not ctx.query.get("fieldManager"):
                raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
            existing = self.store.try_get(kind.group, kind.plural, r.namespace, r.name, copy=False)
            if existing is None and r.subresource != "status":
                return self._apply_create(ctx, kind, patch)
        for _attempt in range(8):
            cur = self.store.get(kind.group, kind.plural, r.namespace, r.name, copy=False)
            view = codec.to_version(kind, r.version, cur)
            view = copy.deepcopy(view)
            if mt == codec.APPLY_PATCH:
                try:
                    patched = field_managers.apply(view, patch, ctx.query["fieldManager"], kind.api_version(r.version),
                                                   force=ctx.query.get("force") == "true", now=self.store.now())
                except field_managers.ApplyConflict as e:
                    raise ApiError(409, e.message, "Conflict", {"name": r.name, "group": kind.group,
                                                                "kind": kind.plural, "causes": e.causes()}) from None
            elif mt == codec.JSON_PATCH:
                patched = json_patch(view, patch)
            else:
                patched = merge_patch(view, patch)
            if not isinstance(patched, dict):
                raise bad_request("the patch produced a value that is not an object")
            meta = patched.get("metadata") if isinstance(patched.get("metadata"), dict) else {}
            patched["metadata"] = meta
            if meta.get("name", r.name) != r.name:
                raise bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the "
                                  f"URL ({r.name})")
            meta["name"] = r.name
            if kind.namespaced:
                meta["namespace"] = r.namespace
            patched["apiVersion"] = kind.api_version(r.version)
            patched["kind"] = kind.kind
            # The patch may pin a resourceVersion (optimistic lock); otherwise retry on races.
            pinned = self._patch_pins_rv(patch, mt)
            if not pinned:
                meta["resourceVersion"] = cur["metadata"]["resourceVersion"]
            obj = codec.from_version(kind, r.version, patched)
            try:
                return self._store_update(ctx, kind, obj, "patch", applied=mt == codec.APPLY_PATCH)
            except Conflict:
                if pinned:
                    raise
        raise ApiError(409, f'Operation cannot be fulfilled on {kind.qualified} "{r.name}": too many '
                            "concurrent updates", "Conflict")

    @staticmethod
    def _patch_pins_rv(patch: Any, mt: str) -> bool:
        if mt == codec.JSON_PATCH:
            return any(isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion"
                       and op.get("op") in ("add", "replace") for op in patch)
        meta = patch.get("metadata") if isinstance(patch, dict) else None
        return isinstance(meta, dict) and bool(meta.get("resourceVersion"))

    def _apply_create(self, ctx: Ctx, kind: Kind, body: Obj) -> Reply:
        r = ctx.route
        body = codec.check_type_meta(kind, r.version, body)
        body["metadata"]["name"] = r.name
        if kind.namespaced:
            body["metadata"]["namespace"] = r.namespace
        config = copy.deepcopy(body)
        obj = copy.deepcopy(codec.from_version(kind, r.version, body))
        prepare_for_create(kind, obj)
        apply_defaults(kind, obj)
        obj["metadata"]["managedFields"] = [field_managers.apply_entry(
            ctx.query["fieldManager"], kind.api_version(r.version), config, self.store.now())]
        self._validate(ctx, kind, obj, None)
        if kind.namespaced:
            self._require_namespace(kind, r.namespace)
        is_dry = dry_run(ctx)
        self._admit(ctx, "create", kind, obj, None, is_dry)
        created = self.store.create(kind.group, kind.plural, obj, dry_run=is_dry)
        return Reply(201, self._present(ctx, kind, created), headers=self._warnings(ctx, kind))

    # ----------------------------------------------------------------- delete
    def _delete_options(self, ctx: Ctx) -> Obj:
        raw = ctx.read_body()
        opts: Obj = {}
        if raw.strip():
            decoded = codec.decode_body(raw, ctx.content_type or "application/json")
            if not isinstance(decoded, dict):
                raise bad_request("DeleteOptions must be an object")
            opts = decoded
        for q in ("propagationPolicy", "gracePeriodSeconds"):
            if q in ctx.query:
                opts[q] = ctx.query[q]
        if "orphanDependents" in ctx.query:
            opts["orphanDependents"] = ctx.query["orphanDependents"] == "true"
        return opts

    def _propagation(self, kind: Kind, opts: Obj) -> str:
        policy = opts.get("propagationPolicy")
        if policy is None and opts.get("orphanDependents") is not None:
            policy = "Orphan" if opts["orphanDependents"] else "Background"
        policy = policy or kind.default_propagation
        if policy not in ("Orphan", "Background", "Foreground"):
            raise ApiError(422, f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                                f'"{policy}": supported values: "Foreground", "Background", "Orphan"', "Invalid")
        return policy

    def delete(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        opts = self._delete_options(ctx)
        pre = opts.get("preconditions") if isinstance(opts.get("preconditions"), dict) else {}
        is_dry = dry_run(ctx, opts)
        old = self.store.get(kind.group, kind.plural, r.namespace, r.name, copy=False)
        self._admit(ctx, "delete", kind, None, old, is_dry)
        result = self.store.delete(kind.group, kind.plural, r.namespace, r.name,
                                   propagation=self._propagation(kind, opts), uid=pre.get("uid"),
                                   resource_version=pre.get("resourceVersion"), dry_run=is_dry)
        return Reply(200, codec.to_version(kind, r.version, result), headers=self._warnings(ctx, kind))

    def delete_collection(self, ctx: Ctx) -> Reply:
        r = ctx.route
        kind = r.kind
        assert kind is not None
        opts = self._delete_options(ctx)
        is_dry = dry_run(ctx, opts)
        pred, candidates = self._filters(ctx, kind)
        items, _, _ = self.store.list_page(kind.group, kind.plural, r.namespace or None, predicate=pred,
                                           candidates=candidates)
        deleted = []
        for o in list(items):
            m = o["metadata"]
            try:
                self._admit(ctx, "delete", kind, None, o, is_dry)
                deleted.append(self.store.delete(kind.group, kind.plural, m.get("namespace"), m["name"],
                                                 propagation=self._propagation(kind, opts), dry_run=is_dry))
            except NotFound:
                continue
        return Reply(200, {"kind": kind.list_kind, "apiVersion": kind.api_version(r.version),
                           "metadata": {"resourceVersion": str(self.store.resource_version)},
                           "items": [codec.to_version(kind, r.version, o) for o in deleted]},
                     headers=self._warnings(ctx, kind))


__all__ = ["Ctx", "Reply", "Resources", "not_found"]
