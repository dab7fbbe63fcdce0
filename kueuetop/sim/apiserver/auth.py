"""Bearer-token authentication and a two-role authorizer (admin, viewer)."""

from __future__ import annotations

import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kueuetop.sim.apiserver.status import ApiError

READ_VERBS = frozenset({"get", "list", "watch"})
ROLES = ("admin", "viewer")


@dataclass(frozen=True)
class User:
    name: str
    role: str  # "admin" or "viewer"

    @property
    def groups(self) -> list[str]:
        return ["system:authenticated"]


ANONYMOUS_ADMIN = User("system:admin", "admin")


def load_tokens(source: str | os.PathLike[str] | dict[str, Any]) -> dict[str, User]:
    """Tokens from a YAML/JSON file or mapping: {token: {user: NAME, role: admin|viewer}}."""
    if isinstance(source, dict):
        data: Any = source
    else:
        text = Path(source).read_text()
        try:
            data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            where = getattr(exc, "problem_mark", None)
            at = f" at line {where.line + 1}" if where is not None else ""
            what = getattr(exc, "problem", None) or getattr(exc, "msg", None) or type(exc).__name__
            raise ValueError(f"token file {source} is not valid YAML or JSON{at}: {what}") from None
    try:
        return _users(data)
    except ValueError as exc:
        if isinstance(source, dict):
            raise
        raise ValueError(f"token file {source}: {exc}") from None


def _users(data: Any) -> dict[str, User]:
    if isinstance(data, dict) and isinstance(data.get("tokens"), dict):
        data = data["tokens"]
    if not isinstance(data, dict):
        raise ValueError("it must map token -> {user, role}")
    out: dict[str, User] = {}
    for n, (token, entry) in enumerate(data.items(), 1):
        if not isinstance(entry, dict):  # the token itself is a secret: the entry is named by position
            raise ValueError(f"entry {n} must be a mapping {{user, role}}")
        role = entry.get("role", "viewer")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} (expected admin or viewer)")
        out[str(token)] = User(str(entry.get("user") or "user"), role)
    return out


class Authorizer:
    """tokens None: no authentication, everyone is admin of the API, but the fault switches and
    other admin endpoints of kueuetop itself still need `admin_token` when one is set."""

    def __init__(self, tokens: dict[str, User] | None, admin_token: str | None = None) -> None:
        self.tokens = tokens
        self.admin_token = admin_token

    def may_change_faults(self, user: User, authorization: str | None) -> bool:
        if user.role != "admin":
            return False
        if self.tokens is not None or not self.admin_token:
            return True
        given = authorization[7:].strip() if authorization and authorization.lower().startswith("bearer ") else ""
        return hmac.compare_digest(given.encode(), self.admin_token.encode())

    @property
    def enabled(self) -> bool:
        return self.tokens is not None

    def authenticate(self, authorization: str | None) -> User:
        if self.tokens is None:
            return ANONYMOUS_ADMIN
        if authorization and authorization.lower().startswith("bearer "):
            user = self.tokens.get(authorization[7:].strip())
            if user is not None:
                return user
        raise ApiError(401, "Unauthorized", "Unauthorized")

    @staticmethod
    def allowed(user: User, verb: str) -> bool:
        return user.role == "admin" or verb in READ_VERBS

    def check(self, user: User, verb: str, group: str, resource: str, subresource: str = "",
              namespace: str = "", name: str = "", qualified: str = "") -> None:
        if self.allowed(user, verb):
            return
        raise forbidden(user, verb, group, resource, subresource, namespace, name, qualified)


def forbidden(user: User, verb: str, group: str, resource: str, subresource: str, namespace: str,
              name: str, qualified: str) -> ApiError:
    """403 with the RBAC authorizer's message wording."""
    target = qualified or (f"{resource}.{group}" if group else resource)
    subject = f'{target} "{name}"' if name else target
    res = f"{resource}/{subresource}" if subresource else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = (f'{subject} is forbidden: User "{user.name}" cannot {verb} resource "{res}" '
               f'in API group "{group}" {scope}')
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return ApiError(403, message, "Forbidden", details)


def review(user: User, body: dict[str, Any]) -> dict[str, Any]:
    """Answer a SelfSubjectAccessReview for the caller."""
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    attrs = spec.get("resourceAttributes")
    non_res = spec.get("nonResourceAttributes")
    if isinstance(attrs, dict):
        verb = str(attrs.get("verb") or "")
    elif isinstance(non_res, dict):
        verb = str(non_res.get("verb") or "")
    else:
        raise ApiError(422, 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes:'
                            " Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes"
                            " must be specified", "Invalid")
    allowed = Authorizer.allowed(user, verb)
    status: dict[str, Any] = {"allowed": allowed}
    if allowed:
        role = "cluster-admin" if user.role == "admin" else "view"
        status["reason"] = (f'RBAC: allowed by ClusterRoleBinding "kueuetop-{user.role}" of ClusterRole '
                            f'"{role}" to User "{user.name}"')
    out = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
           "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
    return out
