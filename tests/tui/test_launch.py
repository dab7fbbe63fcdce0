"""Starting the console: the no-cluster message, the demo cluster process, the store bridge."""

from __future__ import annotations

import argparse
import sys

import pytest

from kueuetop.sources.connection import connect
from kueuetop.store import Store, StoreEvent
from kueuetop.tui.bridge import StoreBridge
from kueuetop.tui.launch import add_console_options, run_console, start_demo


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_console_options(p)
    return p.parse_args(list(argv))


def test_options_parse() -> None:
    a = _args("--demo", "--read-only", "--theme", "mono", "--ascii", "--no-mouse", "-n", "team-a")
    assert a.demo == "refarch" and a.read_only and a.theme == "mono" and a.ascii and a.no_mouse
    assert _args("--demo", "dws").demo == "dws" and _args().demo is None


def test_no_cluster_is_a_clear_message_before_textual(tmp_path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    code = run_console(_args("--kubeconfig", str(tmp_path / "missing")))
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("kueuetop: ") and "hint:" in err and "--demo" in err
    assert "Traceback" not in err


def test_unreachable_server_message(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from kueuetop.sim.apiserver import write_kubeconfig

    kc = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:9")  # discard port: nothing listens
    assert run_console(_args("--kubeconfig", str(kc))) == 1
    err = capsys.readouterr().err
    assert "cannot reach" in err and "hint:" in err and "Traceback" not in err


def test_demo_runs_sim_serve_as_its_own_process() -> None:
    demo = start_demo("refarch", speed=1.0, timeout=60)
    try:
        assert demo.proc.poll() is None and demo.kubeconfig.exists()
        assert str(demo.proc.args[1:4]) == str(["-m", "kueuetop", "sim"])
        conn = connect(str(demo.kubeconfig))
        try:
            assert conn.kueue.version in ("v1beta2", "v1beta1")
        finally:
            conn.close()
    finally:
        demo.stop()
    assert demo.proc.poll() is not None and not demo.tmpdir.exists()


def test_bridge_posts_once_until_taken() -> None:
    from kueuetop.kueue.parse import parse_object
    from kueuetop.store import Entry

    posted: list[object] = []
    store = Store()
    bridge = StoreBridge(store, posted.append)
    bridge.start()
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "uid": "u", "resourceVersion": "1"}}
    for i in range(50):
        raw = {**ns, "metadata": {**ns["metadata"], "resourceVersion": str(i)}}
        store.apply(StoreEvent.upsert("namespaces", "ns", Entry(("", "a"), raw, parse_object(raw), "u", str(i))))
    assert len(posted) == 1
    assert bridge.take() == frozenset({"namespaces"})
    store.apply(StoreEvent.delete("namespaces", "ns", ("", "a")))
    assert len(posted) == 2
    bridge.stop()
    store.apply(StoreEvent.upsert("namespaces", "ns", Entry(("", "a"), ns, parse_object(ns), "u", "x")))
    assert len(posted) == 2


def test_launch_does_not_import_textual_until_the_console_runs() -> None:
    import subprocess

    code = "import sys, kueuetop.tui.launch as l; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "False", out.stderr


def test_context_options_choose_the_console() -> None:
    assert _args("--context", "a").context == ["a"]
    assert _args("--context", "a", "--context", "b").context == ["a", "b"]
    assert _args("--all-contexts").all_contexts and _args().context is None


def test_several_contexts_with_a_missing_kubeconfig_is_a_clear_message(tmp_path, capsys: pytest.CaptureFixture[str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    code = run_console(_args("--kubeconfig", str(tmp_path / "missing"), "--all-contexts"))
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("kueuetop: ") and "Traceback" not in err
