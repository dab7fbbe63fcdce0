"""Ask the API server, before acting, whether the caller may do what an action needs.

One SelfSubjectAccessReview per permission the plan uses: `get` (every patch starts with a
read, waits poll) and `patch` on the target's resource. The answer lets the CLI refuse early
and the console grey out an action; the server still has the last word (a 403 later is
reported the same way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from kueuetop.actions.executor import GROUP, resource_of
from kueuetop.kueue.actions import Patch, Target, plan


@dataclass(frozen=True, slots=True)
class Permission:
    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    group: str = GROUP

    def __str__(self) -> str:
        scope = f'in namespace "{self.namespace}"' if self.namespace else "at cluster scope"
        return f'{self.verb} "{self.resource}" in API group "{self.group}" {scope}'


@dataclass(frozen=True)
class AccessCheck:
    allowed: bool  # False when the server said no, or answered the review 401/403; unanswered does not refuse
    known: bool  # every review was answered
    reason: str  # why, one line
    denied: tuple[Permission, ...] = ()
    user: str = ""  # from an allowed review's reason, when the server names the user


def required_permissions(action: str, target: Target) -> tuple[Permission, ...]:
    steps = plan(action, target)
    plural, ns = resource_of(target)
    # `get`: every patch starts with a read (its resourceVersion), waits poll, the outcome is read back.
    verbs = ["get"] + (["patch"] if any(isinstance(s, Patch) for s in steps) else [])
    return tuple(Permission(v, plural, ns, target.name) for v in verbs)


_USER_RE = re.compile(r'to User "([^"]+)"')


def _review(authz: client.AuthorizationV1Api, p: Permission, timeout: float) -> tuple[bool, str]:
    body = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(group=p.group, resource=p.resource, verb=p.verb,
                                                        namespace=p.namespace or None, name=p.name or None)))
    status = authz.create_self_subject_access_review(body, _request_timeout=timeout).status
    return bool(status and status.allowed), str((status and (status.reason or status.evaluation_error)) or "")


def check_access(api_client: client.ApiClient, action: str, target: Target, *,
                 timeout: float = 10.0) -> AccessCheck:
    """SelfSubjectAccessReview for each permission `action` needs on `target`."""
    authz = client.AuthorizationV1Api(api_client)
    denied: list[Permission] = []
    user = ""
    try:
        for p in required_permissions(action, target):
            ok, why = _review(authz, p, timeout)
            if ok:
                m = _USER_RE.search(why)
                user = user or (m.group(1) if m else "")
            else:
                denied.append(p)
    except ApiException as exc:
        if exc.status in (401, 403):
            # The server refused to even answer the review: acting now would be blind. Refuse,
            # naming what the action needs (the review itself is what the 401/403 was about).
            needs = "; ".join(str(p) for p in required_permissions(action, target))
            why = ("the API server rejected the credentials (401)" if exc.status == 401
                   else "the API server forbade the access review itself (403: create "
                        '"selfsubjectaccessreviews" in API group "authorization.k8s.io")')
            return AccessCheck(False, True, f"refused: cannot check permission to {action} {target}: {why}; "
                                            f"the action needs permission to {needs}",
                               tuple(p for p in required_permissions(action, target) if p.verb == "patch"))
        return AccessCheck(True, False, f"could not check permissions (SelfSubjectAccessReview: {exc.status})")
    except (Urllib3Error, OSError) as exc:
        return AccessCheck(True, False, f"could not check permissions: {type(exc).__name__}")
    if denied:
        who = f'user "{user}"' if user else "you"
        missing = "; ".join(str(p) for p in denied)
        return AccessCheck(False, True, f"forbidden: {who} may not {action} {target}: missing RBAC permission "
                                        f"to {missing}", tuple(denied), user)
    return AccessCheck(True, True, f"allowed to {action} {target}", (), user)


def whoami(api_client: client.ApiClient, timeout: float = 5.0) -> str:
    """The authenticated user name via SelfSubjectReview, "" when the server does not serve it."""
    try:
        resp: Any = client.AuthenticationV1Api(api_client).create_self_subject_review(
            client.V1SelfSubjectReview(), _request_timeout=timeout)
    except (ApiException, Urllib3Error, OSError, ValueError):
        return ""
    info = getattr(getattr(resp, "status", None), "user_info", None)
    return str(getattr(info, "username", "") or "")
