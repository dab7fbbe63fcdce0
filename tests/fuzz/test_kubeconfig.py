"""Kubeconfig files (kueuetop.sources.connection.load_client, what every live command and the console
load first): kubeconfigs as `sim serve` and cloud providers write them, as YAML text with
characters inserted, cut or repeated, as documents with mutated fields, and as bytes that are
not UTF-8. Each loads or raises ConnectionProblem with a one-line message, never a traceback."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, example, given
from hypothesis import strategies as st

from kueuetop.kueue.json_copy import clone
from kueuetop.sim.apiserver.kubeconfig import kubeconfig_dict
from kueuetop.sources.connection import ConnectionProblem, load_client

from .strategies import FUZZ, as_json, mutate_text, mutate_tree, one_line, pick

_PEM = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
DOCS = [
    kubeconfig_dict("http://127.0.0.1:8080", token="secret-token"),
    kubeconfig_dict("https://127.0.0.1:6443", token="t", namespace="team-a", context="sim-tls",
                    ca_pem=b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
    {"apiVersion": "v1", "kind": "Config", "current-context": "gke",
     "clusters": [{"name": "gke", "cluster": {"server": "https://user:pass@10.0.0.1", "insecure-skip-tls-verify": True,
                                              "proxy-url": "http://proxy:3128"}},
                  {"name": "eks", "cluster": {"server": "https://eks.example:443", "certificate-authority-data": _PEM}}],
     "users": [{"name": "admin", "user": {"username": "admin", "password": "hunter2"}},
               {"name": "cert", "user": {"client-certificate-data": _PEM, "client-key-data": _PEM}}],
     "contexts": [{"name": "gke", "context": {"cluster": "gke", "user": "admin", "namespace": "default"}},
                  {"name": "eks", "context": {"cluster": "eks", "user": "cert"}}]},
]
TEXTS = [yaml.safe_dump(d, sort_keys=False) for d in DOCS]
# Credential plugins would run a program: not from a fuzzer.
_RUNS_SOMETHING = ("exec", "auth-provider", "cmd-path")


@st.composite
def kubeconfigs(draw: st.DrawFn) -> tuple[bytes, str | None]:
    form = draw(st.integers(0, 2))
    if form == 0:
        text = mutate_text(draw, TEXTS[pick(draw, len(TEXTS))]).encode("utf-8", "surrogatepass")
    elif form == 1:  # JSON is YAML
        text = as_json(mutate_tree(draw, clone(DOCS[pick(draw, len(DOCS))]))).encode()
    else:  # not UTF-8
        text = TEXTS[pick(draw, len(TEXTS))].encode("utf-16") if draw(st.booleans()) else draw(st.binary(max_size=64))
    context = draw(st.sampled_from([None, None, "gke", "eks", "kueuetop-sim", "missing"]))
    return text, context


@pytest.fixture(scope="module")
def path(scratch: Path) -> Path:
    (scratch / "kube").mkdir()
    return scratch / "kube" / "config"


@FUZZ
@given(case=kubeconfigs())
@example(case=(b"contexts: 5\ncurrent-context: a\n", None))  # once a TypeError: 5 is not iterable
@example(case=(b"\xff\xfe\x00k", None))  # once a UnicodeDecodeError: not an OSError
@example(case=(b"current-context: 2026-13-45\n", None))  # once a ValueError from PyYAML's date
@example(case=(b'contexts: [{name: "\\e[2J\\n"}]\ncurrent-context: x\n', None))  # once the raw name in the hint
@example(case=(TEXTS[2].replace("http://proxy:3128", "' ['").encode(), None))  # once urllib3's LocationParseError
@example(case=(TEXTS[2].replace("proxy-url: http://proxy:3128", "proxy-url: [x]").encode(), None))  # AttributeError
def test_kubeconfigs_load_or_say_why_in_one_line(path: Path, case: tuple[bytes, str | None]) -> None:
    data, context = case
    assume(not any(word.encode() in data for word in _RUNS_SOMETHING))
    path.write_bytes(data)
    try:
        api, _ = load_client(str(path), context)
    except ConnectionProblem as exc:
        assert one_line(exc.describe()), exc.describe()
    else:
        api.close()
