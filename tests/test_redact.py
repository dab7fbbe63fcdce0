"""Credentials in URLs never reach stderr, log lines or the audit log."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kueuetop.actions.audit import AuditRecord, write_audit
from kueuetop.redact import RedactingFilter, one_line, redact
from kueuetop.sim.apiserver.kubeconfig import write_kubeconfig
from tests.sim.test_serve_process import free_port


@pytest.mark.parametrize(("text", "secret"), [
    ("cannot reach https://alice:s3cret-pass@api.example.com:6443/version", "s3cret-pass"),
    ("GET http://bob@10.0.0.1/apis?watch=1", "bob"),
    ("https://api.example.com/login?token=abcd1234efgh&x=1", "abcd1234efgh"),
    ("https://h/x?a=1&access_token=zz-top-secret", "zz-top-secret"),
    ("proxy said: Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi.payload.sig"),
    ("url=https://u:p%40ss@host/path#frag", "p%40ss"),
    ("echoed Authorization: Basic YWxpY2U6c2VjcmV0", "YWxpY2U6c2VjcmV0"),
    ("token rejected: bearer abc.def-ghi", "abc.def-ghi"),
])
def test_redact_masks_credentials(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and "***" in out


@pytest.mark.parametrize("text", [
    "cannot reach https://api.example.com:6443/version?limit=500 (connection refused)",
    "the basic quota of cq-a is exhausted; email admin@example.com",
    "workloads?labelSelector=team%3Da&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ",
])
def test_redact_keeps_plain_urls_and_text(text: str) -> None:
    assert redact(text) == text


def test_one_line_drops_control_characters_and_truncates() -> None:
    out = one_line("a\x1b[31mred\nnext\tline https://u:pw@h/ " + "x" * 500, limit=80)
    assert "\x1b" not in out and "\n" not in out and "pw" not in out and len(out) <= 81


def test_log_filter_masks_message_and_arguments() -> None:
    rec = logging.LogRecord("x", logging.WARNING, __file__, 1, "server %s failed", ("https://a:hunter2@h",), None)
    assert RedactingFilter().filter(rec)
    assert "hunter2" not in rec.getMessage() and "https://***@h" in rec.getMessage()


def test_audit_log_never_holds_url_credentials(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    rec = AuditRecord("hold", "team-a/w", "error", "cannot reach https://alice:pw-1234@api.example.com",
                      cluster="https://alice:pw-1234@api.example.com")
    assert write_audit(rec, path=path) is None
    text = path.read_text()
    assert "pw-1234" not in text and json.loads(text)["message"] == "cannot reach https://***@api.example.com"


def test_connection_error_printed_without_the_password(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kc", f"http://admin:topsecret99@127.0.0.1:{free_port()}")
    for cmd in (["snapshot", "--timeout", "5s"], ["hold", "team-a/w", "--yes", "--no-preview"]):
        r = subprocess.run([sys.executable, "-m", "kueuetop", *cmd, "--kubeconfig", str(kc)],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "HOME": str(tmp_path), "KUEUETOP_STATE_DIR": str(tmp_path)})
        assert r.returncode != 0
        assert "topsecret99" not in r.stderr + r.stdout and "127.0.0.1" in r.stderr, r.stderr
    audit = tmp_path / "audit.jsonl"
    assert not audit.exists() or "topsecret99" not in audit.read_text()
