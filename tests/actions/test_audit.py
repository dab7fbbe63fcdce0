"""The audit log and the XDG directories it lives in."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from kueuetop import xdg
from kueuetop.actions.audit import AuditRecord, audit_path, read_audit, write_audit


def test_xdg_dirs_follow_the_spec(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert xdg.config_dir(env) == tmp_path / ".config" / "kueuetop"
    assert xdg.state_dir(env) == tmp_path / ".local" / "state" / "kueuetop"
    assert xdg.cache_dir(env) == tmp_path / ".cache" / "kueuetop"
    env |= {"XDG_CONFIG_HOME": "/x/conf", "XDG_STATE_HOME": "/x/state", "XDG_CACHE_HOME": "relative/ignored"}
    assert xdg.config_dir(env) == Path("/x/conf/kueuetop")
    assert xdg.state_dir(env) == Path("/x/state/kueuetop")
    assert xdg.cache_dir(env) == tmp_path / ".cache" / "kueuetop"  # relative values are invalid per the spec
    env["KUEUETOP_STATE_DIR"] = "/elsewhere"
    assert xdg.state_dir(env) == Path("/elsewhere")


def test_append_only_0600(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KUEUETOP_STATE_DIR", raising=False)
    path = audit_path()
    assert path == tmp_path / "state" / "kueuetop" / "audit.jsonl"
    assert write_audit(AuditRecord("hold", "team-a/w", "ok", "done", cluster="c", context="ctx", user="alice",
                                   preview=("would admit team-a/x in cq",))) is None
    assert write_audit(AuditRecord("drain", "cq/q", "error", "forbidden: …", dry_run=True, error="forbidden")) is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["action"] == "hold" and first["user"] == "alice" and first["result"] == "ok"
    assert first["preview"] == ["would admit team-a/x in cq"] and first["time"].endswith("Z")
    assert [r["action"] for r in read_audit()] == ["hold", "drain"]
    assert read_audit()[1]["dryRun"] is True


def test_secrets_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    write_audit(AuditRecord("hold", "a/b", "error", "server said Bearer sekrit-token-1"), path,
                secrets=["sekrit-token-1"])
    assert "sekrit-token-1" not in path.read_text()


def test_write_failure_is_reported_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    problem = write_audit(AuditRecord("hold", "a/b", "ok"), blocker / "sub" / "audit.jsonl")
    assert problem and problem.startswith("audit log ") and "not written" in problem
