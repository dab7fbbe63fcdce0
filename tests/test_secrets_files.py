"""Kubeconfigs kueuetop writes (they hold tokens): a checked private directory, exclusive
creation, never through a symlink, removed on exit."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kueuetop.sim.apiserver.kubeconfig import write_kubeconfig
from kueuetop.xdg import UnsafePath, private_dir
from tests.waiting import wait_until


def test_kubeconfig_is_created_0600_even_under_a_loose_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        p = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:1", token="t0ken")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_existing_file_is_not_reused_with_its_mode(tmp_path: Path) -> None:
    planted = tmp_path / "kc"
    planted.write_text("planted")
    planted.chmod(0o666)
    with pytest.raises(UnsafePath, match="already there"):
        write_kubeconfig(planted, "http://127.0.0.1:1", token="t0ken")
    assert planted.read_text() == "planted"


def test_symlink_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "kc"
    link.symlink_to(victim)
    with pytest.raises(UnsafePath, match="symlink"):
        write_kubeconfig(link, "http://127.0.0.1:1", token="t0ken")
    assert victim.read_text() == "keep me"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UnsafePath):
        write_kubeconfig(dangling, "http://127.0.0.1:1", token="t0ken")
    assert not (tmp_path / "nowhere").exists()


def test_private_dir_uses_a_usable_runtime_dir(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    d = private_dir({"XDG_RUNTIME_DIR": str(run)})
    assert d == run / "kueuetop" and stat.S_IMODE(d.stat().st_mode) == 0o700


def test_private_dir_falls_back_when_the_runtime_dir_is_unusable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    d = private_dir({"XDG_RUNTIME_DIR": str(tmp_path / "missing")})
    assert d == tmp_path / f"kueuetop-{os.getuid()}" and stat.S_IMODE(d.stat().st_mode) == 0o700
    assert private_dir({"XDG_RUNTIME_DIR": "relative/dir"}) == d


@pytest.mark.parametrize("case", ["loose-mode", "symlink", "file", "other-owner"])
def test_private_dir_refuses_an_unsafe_fallback(case: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    target = tmp_path / f"kueuetop-{os.getuid()}"
    if case == "loose-mode":
        target.mkdir()
        target.chmod(0o777)
    elif case == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        target.symlink_to(tmp_path / "elsewhere")
    elif case == "file":
        target.write_text("")
    else:
        if os.getuid() != 0:
            pytest.skip("changing a directory's owner needs root")
        target.mkdir(mode=0o700)
        os.chown(target, 65534, 65534)
    with pytest.raises(UnsafePath) as err:
        private_dir({})
    assert str(target) in str(err.value) and "\n" not in str(err.value)


def _serve(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    (tmp_path / "run").mkdir(mode=0o700, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", "refarch", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _kubeconfig_line(proc: subprocess.Popen[str]) -> Path:
    assert proc.stdout is not None
    for line in proc.stdout:
        if "kubeconfig written to" in line:
            return Path(line.rsplit(" ", 1)[1].strip())
    raise AssertionError(f"no kubeconfig announced: {proc.stderr.read() if proc.stderr else ''}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sim_serve_kubeconfig_in_runtime_dir_removed_on_signal(sig: signal.Signals, tmp_path: Path) -> None:
    proc = _serve(tmp_path)
    try:
        kc = _kubeconfig_line(proc)
        assert kc.parent == tmp_path / "run" / "kueuetop"
        assert stat.S_IMODE(kc.stat().st_mode) == 0o600 and "token:" in kc.read_text()
    finally:
        proc.send_signal(sig)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert not kc.exists()


def test_sim_serve_refuses_a_symlinked_kubeconfig(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "kc").symlink_to(victim)
    proc = _serve(tmp_path, "--kubeconfig", str(tmp_path / "kc"))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and len(err.splitlines()) == 1 and "symlink" in err and "Traceback" not in err
    assert victim.read_text() == "keep me"


def test_demo_cluster_lives_in_the_private_dir_and_is_removed(tmp_path: Path, monkeypatch) -> None:
    from kueuetop.tui.launch import start_demo

    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    demo = start_demo("refarch")
    try:
        assert demo.kubeconfig.parent.parent == tmp_path / "run" / "kueuetop"
        assert stat.S_IMODE(demo.tmpdir.stat().st_mode) == 0o700
        assert stat.S_IMODE(demo.kubeconfig.stat().st_mode) == 0o600
    finally:
        demo.stop()
    assert not demo.tmpdir.exists()


def test_console_on_sigterm_stops_the_demo_and_removes_its_files(tmp_path: Path) -> None:
    """The console killed with SIGTERM while starting: the demo child and its directory go."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run), "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "--demo", "refarch"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert wait_until(lambda: any((run / "kueuetop").glob("demo-*/kubeconfig")), timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    assert proc.returncode != 0
    assert wait_until(lambda: list((run / "kueuetop").iterdir()) == [], timeout=10)


def test_a_stale_kubeconfig_in_the_private_dir_is_replaced(tmp_path: Path, monkeypatch) -> None:
    """A server killed with SIGKILL leaves its kubeconfig; the next one on that port replaces
    it (the private directory is ours alone), rather than refusing to start."""
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.serve import start_served
    from tests.sim.test_serve_process import free_port

    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    port = free_port()
    stale = private_dir() / f"sim-{port}.kubeconfig"
    stale.write_text("stale")
    served = start_served(load_scenario("refarch"), port=port)
    try:
        assert served.kubeconfig == stale and "stale" not in stale.read_text()
        assert stat.S_IMODE(stale.stat().st_mode) == 0o600
    finally:
        served.stop()
    assert not stale.exists()
