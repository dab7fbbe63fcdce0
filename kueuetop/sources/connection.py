"""Connect to a cluster as kubectl would, and find out which Kueue APIs it serves.

Kubeconfig resolution follows kubectl: `--kubeconfig`, else `$KUBECONFIG` (several files,
merged, first wins), else `~/.kube/config`, else the pod's service account (in-cluster);
`--context` overrides current-context. Exec credential plugins (gke-gcloud-auth-plugin,
aws, kubelogin…) run through the kubernetes client. Every failure becomes a
`ConnectionProblem` with one line for people and a hint, never a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from kueuetop.redact import one_line, redact
from kueuetop.sources.kube_http import ApiError, request
from kueuetop.sources.retry import call_with_retry

_log = logging.getLogger(__name__)
# libyaml's safe loader when present (several times faster than the pure-Python one), as kubectl's
# own parse is not the slow part of a start.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
AUTOSCALING_GROUP = "autoscaling.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # preferred first (reference/kueue.md §1.1)
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1", "v1alpha1")


class ConnectionProblem(Exception):
    """Cannot talk to the cluster. `str()` is one line; `hint` says what to try."""

    def __init__(self, message: str, hint: str = "") -> None:
        # Messages name the server URL, which may carry credentials (https://user:pass@host), and
        # names from the kubeconfig, which may hold anything (newlines, escape sequences): one
        # redacted line each.
        self.message = one_line(message, 1000)
        self.hint = one_line(hint, 1000)
        super().__init__(message)

    def __str__(self) -> str:
        return self.message

    def describe(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class NoKueue(ConnectionProblem):
    """The cluster answers but does not serve kueue.x-k8s.io."""


class ExecPluginFailed(ConnectionProblem):
    """The kubeconfig's exec credential plugin failed; the message summarises its output."""


class NotKubernetes(ConnectionProblem):
    """The server answers, but not as a Kubernetes API server (an HTML login page, a proxy)."""


@dataclass(frozen=True)
class ClusterInfo:
    context: str  # "" in-cluster
    server: str
    user: str
    namespace: str = "default"
    in_cluster: bool = False


@dataclass(frozen=True)
class KueueApi:
    """What the server offers: the Kueue version to use and which resources exist."""

    version: str  # "v1beta2" or "v1beta1"
    resources: frozenset[str] = field(default_factory=frozenset)  # plurals served in that version
    visibility_version: str | None = None  # None: no visibility API (no queue positions)
    provisioning_version: str | None = None  # autoscaling.x-k8s.io ProvisioningRequest

    def serves(self, plural: str) -> bool:
        return plural in self.resources


@dataclass
class Connection:
    api: k8s.ApiClient
    info: ClusterInfo
    kueue: KueueApi

    def close(self) -> None:
        self.api.close()


# ===================================================================== kubeconfig
def kubeconfig_paths(explicit: str | None = None) -> list[str]:
    """The files kubectl would read, in merge order (existing ones only)."""
    if explicit:
        return [explicit]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p and Path(p).expanduser().exists()]
    default = Path("~/.kube/config").expanduser()
    return [str(default)] if default.exists() else []


def _in_cluster_available() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path(
        "/var/run/secrets/kubernetes.io/serviceaccount/token").exists()


def load_client(kubeconfig: str | None = None, context: str | None = None) -> tuple[k8s.ApiClient, ClusterInfo]:
    """An ApiClient configured from kubeconfig (or the service account) and what it points at."""
    if kubeconfig and not Path(kubeconfig).expanduser().exists():
        raise ConnectionProblem(f"kubeconfig {kubeconfig} does not exist", "check the --kubeconfig path")
    paths = kubeconfig_paths(kubeconfig)
    cfg = k8s.Configuration()
    if not paths:
        if context is None and _in_cluster_available():
            try:
                k8s_config.load_incluster_config(client_configuration=cfg)
            except ConfigException as e:
                raise ConnectionProblem(f"in-cluster configuration is broken: {_one_line(e)}",
                                        "check the pod's service account token and KUBERNETES_SERVICE_HOST") from None
            cfg.retries = 1
            return k8s.ApiClient(cfg), ClusterInfo("", cfg.host, "serviceaccount", _sa_namespace(), True)
        raise ConnectionProblem("no kubeconfig found (KUBECONFIG unset, ~/.kube/config missing)",
                                "pass --kubeconfig, set KUBECONFIG, or run `kueuetop --demo`")
    joined = os.pathsep.join(paths)
    contexts, current = _read_contexts(paths)
    chosen = context or current
    if not chosen:
        raise ConnectionProblem(f"kubeconfig {joined} has no current context",
                                f"pass --context (one of: {', '.join(contexts) or 'none defined'})")
    if chosen not in contexts:
        raise ConnectionProblem(f"context {chosen!r} not found in {joined}",
                                f"available contexts: {', '.join(contexts) or 'none'}")
    ctx = contexts[chosen]
    try:
        with _plugin_stderr_captured() as captured:
            with _client_log_captured() as logged:
                k8s_config.load_kube_config(config_file=joined, context=chosen, client_configuration=cfg,
                                            persist_config=False)
            # The kubernetes client logs a failed exec plugin (logging.error, which also installs a
            # stderr handler on the root logger) and carries on without credentials; with a terminal
            # the plugin's stderr goes to it and the logged error is an AttributeError on None.
            errors = [r.getMessage() for r in logged if r.levelno >= logging.ERROR]
            if errors and _uses_exec(paths, ctx):
                raise ConfigException(errors[-1] if errors[-1].startswith("exec:") else f"exec: {errors[-1]}")
        for r in logged:
            _log.log(r.levelno, "%s", redact(r.getMessage()))
    except ConfigException as e:
        if str(e).startswith("exec:"):
            raise ExecPluginFailed(f"context {chosen!r} cannot be used: {exec_failure(str(e), captured.text)}",
                                   _auth_hint("exec")) from None
        raise ConnectionProblem(f"context {chosen!r} cannot be used: {_one_line(e)}",
                                _auth_hint(str(e))) from None
    except Exception as e:  # exec plugin crashed, cert files missing…
        raise ConnectionProblem(f"context {chosen!r} cannot be used: {type(e).__name__}: {_one_line(e)}",
                                _auth_hint(str(e))) from None
    cfg.retries = 1  # informers retry with backoff themselves; discovery must fail fast
    cfg.connection_pool_maxsize = 32  # one connection per informer stream plus short requests
    # `server` is for display (status bar, snapshot, messages); requests use cfg.host.
    info = ClusterInfo(context=str(chosen), server=redact(str(cfg.host)), user=str(ctx.get("user") or ""),
                       namespace=str(ctx.get("namespace") or "default"))
    try:
        return k8s.ApiClient(cfg), info
    except Exception as e:  # urllib3 builds its pools here: a proxy-url that is no URL fails now
        raise ConnectionProblem(f"context {chosen!r} cannot be used: {type(e).__name__}: {_one_line(e)}",
                                "check the cluster's server and proxy-url") from None


def _read_contexts(paths: list[str]) -> tuple[dict[str, dict[str, Any]], str]:
    """Contexts and current-context merged as kubectl does: the first file to define a name wins."""
    contexts: dict[str, dict[str, Any]] = {}
    current = ""
    for p in paths:
        try:
            doc = yaml.load(Path(p).expanduser().read_text(), Loader=_YAML_LOADER) or {}
        # ValueError: not UTF-8, or a scalar PyYAML resolves but Python cannot build (a 13th month,
        # an integer of thousands of digits); RecursionError: nesting deeper than the stack.
        except (OSError, ValueError, RecursionError, yaml.YAMLError) as e:
            raise ConnectionProblem(f"cannot read kubeconfig {p}: {type(e).__name__}: {_one_line(e)}",
                                    "run `kubectl config view` to see what is wrong") from None
        if not isinstance(doc, dict):
            raise ConnectionProblem(f"kubeconfig {p} is not a YAML mapping",
                                    "run `kubectl config view` to see what is wrong")
        if not isinstance(doc.get("contexts") or [], list):
            raise ConnectionProblem(f"kubeconfig {p}: contexts is not a list",
                                    "run `kubectl config view` to see what is wrong")
        current = current or str(doc.get("current-context") or "")
        for c in doc.get("contexts") or ():
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                contexts.setdefault(c["name"], c.get("context") if isinstance(c.get("context"), dict) else {})
    return contexts, current


_EXEC_EXIT = re.compile(r"^exec: process returned (-?\d+)\.?\s*", re.DOTALL)


def exec_failure(message: str, captured: str = "") -> str:
    """One line for a failed exec credential plugin: its exit code and the last non-empty line of
    its stderr (where plugins put the reason: expired login, missing binary…), redacted and
    truncated. `message` is the kubernetes client's "exec: process returned N. <stderr>"; when
    stderr went to a terminal, `captured` holds it instead."""
    m = _EXEC_EXIT.match(message)
    code = f" (exit {m.group(1)})" if m else ""
    rest = message[m.end():] if m else ""
    lines = [ln.strip() for ln in (rest + "\n" + captured).splitlines() if ln.strip()]
    if not lines:
        lines = [message.removeprefix("exec:").strip() or "no output"]
    last = one_line(lines[-1], 200)
    return f"the exec credential plugin failed{code}: {last}"


def _uses_exec(paths: list[str], ctx: dict[str, Any]) -> bool:
    """Whether the context's user runs an exec credential plugin (first file defining it wins)."""
    for p in paths:
        with contextlib.suppress(OSError, ValueError, RecursionError, yaml.YAMLError):
            doc = yaml.load(Path(p).expanduser().read_text(), Loader=_YAML_LOADER) or {}
            users = doc.get("users") if isinstance(doc, dict) else None
            for u in users if isinstance(users, list) else ():
                if isinstance(u, dict) and u.get("name") == ctx.get("user"):
                    return isinstance(u.get("user"), dict) and "exec" in u["user"]
    return False


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.records.append(record)


@contextlib.contextmanager
def _client_log_captured() -> Iterator[list[logging.LogRecord]]:
    """Warnings and errors the kubernetes client logs on the root logger while loading, kept
    instead of printed (a handler present means logging.error() installs no stderr handler)."""
    root = logging.getLogger()
    handler = _ListHandler()
    saved = root.handlers[:]
    root.handlers = [handler]
    try:
        yield handler.records
    finally:
        root.handlers = saved


class _Captured:
    text = ""


@contextlib.contextmanager
def _plugin_stderr_captured() -> Iterator[_Captured]:
    """While the kubeconfig loads, file descriptor 2 goes to a private temporary file: the kubernetes
    client lets an exec plugin write straight to a terminal's stderr, and a failing plugin's many
    lines must become the one error line. What was written is replayed to stderr afterwards, so a
    plugin's notices are not lost when it succeeds."""
    out = _Captured()
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (embedded, tests with captured streams)
        yield out
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.text = tmp.read(1 << 20).decode(errors="replace")
    if out.text.strip() and sys.exc_info()[0] is None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(out.text)


def check_api_server(kubeconfig: str | None = None, context: str | None = None, timeout: float = 10.0) -> None:
    """Before a command that changes the cluster: raise ExecPluginFailed or NotKubernetes when the
    credentials cannot be had or the server is not a Kubernetes API server. Other problems are
    left for the command itself to report in its own words."""
    try:
        api, info = load_client(kubeconfig, context)
    except ExecPluginFailed:
        raise
    except ConnectionProblem:
        return
    try:
        found = _get(api, "/version", info, timeout)
    except NotKubernetes:
        raise
    except ConnectionProblem:
        return
    finally:
        api.close()
    if found is None:  # a 404 for /version: a web server, a proxy's catch-all, not an API server
        raise NotKubernetes(f"{info.server} does not look like a Kubernetes API server (no /version)",
                            "check the server URL in your kubeconfig")


def _sa_namespace() -> str:
    try:
        return Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read_text().strip() or "default"
    except OSError:
        return "default"


def _one_line(e: BaseException) -> str:
    return one_line(str(e))


def _auth_hint(text: str) -> str:
    if "exec" in text.lower() or "plugin" in text.lower():
        return ("the credential plugin failed; is it installed and on PATH "
                "(e.g. gke-gcloud-auth-plugin, aws, kubelogin)? try `kubectl get ns` with this context")
    return "try `kubectl get ns` with this context to see the same error"


# ===================================================================== discovery
def _get(api: k8s.ApiClient, path: str, info: ClusterInfo, timeout: float) -> Any:
    """GET for discovery; None on 404; ConnectionProblem for everything that stops us.

    A busy server (429, 5xx) is asked again with backoff within `timeout` (sources/retry.py)."""
    deadline = time.monotonic() + timeout
    try:
        return call_with_retry(lambda: request(api, path, timeout=(timeout, max(0.1, deadline - time.monotonic()))),
                               deadline=deadline)
    except ApiError as e:
        if e.status == 404:
            return None
        if e.status == 401:
            raise ConnectionProblem(f"{info.server} rejected the credentials of user {info.user!r} (401)",
                                    "your token may have expired; log in again (e.g. gcloud auth login)") from None
        if e.status == 403:
            raise ConnectionProblem(f"user {info.user!r} may not read {path} on {info.server} (403)",
                                    "kueuetop needs at least the `view` ClusterRole") from None
        raise ConnectionProblem(f"{info.server} answered {e.status} {e.reason} for {path}",
                                "the API server may be overloaded; try again") from None
    except urllib3.exceptions.MaxRetryError as e:
        raise ConnectionProblem(f"cannot reach {info.server}: {_reason(e)}",
                                "is the cluster up and the VPN/bastion connected? "
                                "`kubectl cluster-info` should work") from None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise ConnectionProblem(f"cannot reach {info.server}: {type(e).__name__}: {_one_line(e)}",
                                "`kubectl cluster-info` should work") from None
    except ValueError:
        raise NotKubernetes(f"{info.server} is not a Kubernetes API server (answer to {path} is not JSON)",
                            "check the server URL in your kubeconfig") from None


def _reason(e: urllib3.exceptions.MaxRetryError) -> str:
    r = e.reason
    if isinstance(r, urllib3.exceptions.NewConnectionError):
        return "connection refused" if "refused" in str(r).lower() else "cannot connect"
    if isinstance(r, urllib3.exceptions.ConnectTimeoutError):
        return "connection timed out"
    if isinstance(r, urllib3.exceptions.SSLError):
        return f"TLS error ({_one_line(r)})"
    return _one_line(r) if r else "unreachable"


def _pick(doc: Any, preferred: tuple[str, ...]) -> str | None:
    if not isinstance(doc, dict):
        return None
    served = {v.get("version") for v in doc.get("versions") or () if isinstance(v, dict)}
    return next((v for v in preferred if v in served), None)


def discover(api: k8s.ApiClient, info: ClusterInfo, timeout: float = 10.0) -> KueueApi:
    """Which Kueue version, resources and side APIs the server offers."""
    if _get(api, "/version", info, timeout) is None:
        raise ConnectionProblem(f"{info.server} does not look like a Kubernetes API server (no /version)",
                                "check the server URL in your kubeconfig")
    group = _get(api, f"/apis/{KUEUE_GROUP}", info, timeout)
    version = _pick(group, KUEUE_VERSIONS)
    if version is None:
        raise NoKueue(f"Kueue is not installed on {info.server} (no {KUEUE_GROUP} v1beta2/v1beta1 API)",
                      "install Kueue ≥ 0.9, pick another --context, or try `kueuetop --demo`")
    resources = _get(api, f"/apis/{KUEUE_GROUP}/{version}", info, timeout) or {}
    plurals = frozenset(r.get("name") for r in resources.get("resources") or ()
                        if isinstance(r, dict) and "/" not in str(r.get("name")))
    visibility = _pick(_get(api, f"/apis/{VISIBILITY_GROUP}", info, timeout), VISIBILITY_VERSIONS)
    autoscaling = _pick(_get(api, f"/apis/{AUTOSCALING_GROUP}", info, timeout), ("v1", "v1beta1"))
    return KueueApi(version, plurals, visibility, autoscaling)


def connect(kubeconfig: str | None = None, context: str | None = None, timeout: float = 10.0) -> Connection:
    """Load credentials, check the server answers, discover Kueue. Raises ConnectionProblem/NoKueue."""
    api, info = load_client(kubeconfig, context)
    try:
        kueue = discover(api, info, timeout)
    except BaseException:
        api.close()
        raise
    return Connection(api, info, kueue)


def context_identity(kubeconfig: str | None = None, context: str | None = None) -> tuple[str, str, str]:
    """(context, cluster, user) names the client would use, resolved as kubectl resolves them
    (`load_client`: the first file's current-context wins); ("", "", "") when the kubeconfig
    cannot be read (the client load reports that). Names only, never credentials."""
    try:
        contexts, current = _read_contexts(kubeconfig_paths(kubeconfig))
    except ConnectionProblem:
        return context or "", "", ""
    chosen = context or current
    ctx = contexts.get(chosen) or {}
    return chosen, str(ctx.get("cluster") or ""), str(ctx.get("user") or "")


def list_contexts(kubeconfig: str | None = None) -> tuple[list[str], str]:
    """The kubeconfig's context names (merged as kubectl merges them) and the current one."""
    contexts, current = _read_contexts(kubeconfig_paths(kubeconfig))
    return list(contexts), current
