"""The console's options given before a command apply to it, as kubectl's global flags do:
`kueuetop --context prod hold …` holds on prod, never on the current context; `--read-only` and
`--read-only-context` refuse actions; an option the command has no use for is a one-line error,
not silently dropped. Against a served cluster with the real client; the kubeconfig's current
context points at a closed port, so a command that loses `--context` fails."""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.tui.launch import add_console_options, run_console
from tests.test_forecast_cli import SCENARIO
from tests.waiting import wait_until

KUEUE, V2 = "kueue.x-k8s.io", "v1beta2"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("console-options")
    (d / "s.yaml").write_text(SCENARIO)
    s = start_served(load_scenario(str(d / "s.yaml")), speed=1, kubeconfig=str(d / "served.kubeconfig"))

    def settled() -> bool:
        with s.parts.cluster.lock:
            wls = s.parts.kueue.snapshot().workloads
        return len(wls) == 5 and sum(w.has_quota_reservation for w in wls.values()) == 2

    try:
        assert wait_until(settled, 30, 0.1), "the scenario did not reach its steady state"
        yield s
    finally:
        s.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kubeconfig(path: Path, url: str, current: str) -> Path:
    """Contexts `sim` (the served cluster) and `dead` (nothing listens), `current` the current one."""
    servers = {"sim": url, "dead": f"http://127.0.0.1:{_closed_port()}"}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current, "preferences": {},
        "clusters": [{"name": n, "cluster": {"server": u}} for n, u in servers.items()],
        "users": [{"name": n, "user": {}} for n in servers],
        "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in servers],
    }))
    path.chmod(0o600)
    return path


@pytest.fixture
def kc(served: ServedCluster, tmp_path: Path) -> Path:
    return _kubeconfig(tmp_path / "two.kubeconfig", served.url, current="dead")


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KUEUETOP_STATE_DIR", raising=False)


def _active(served: ServedCluster, name: str) -> bool:
    api = config.new_client_from_config(config_file=str(served.kubeconfig))
    try:
        wl = client.CustomObjectsApi(api).get_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", name)
    finally:
        api.close()
    return wl["spec"].get("active", True) is not False


def _resume(served: ServedCluster, name: str) -> None:
    api = config.new_client_from_config(config_file=str(served.kubeconfig))
    try:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            KUEUE, V2, "team-a", "workloads", name, {"spec": {"active": True}})
    finally:
        api.close()


def test_context_before_the_command_is_the_one_read(kc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kubeconfig", str(kc), "--context", "sim", "forecast", "-o", "json", "--timeout", "20s"]) == 0
    names = {w["name"] for w in json.loads(capsys.readouterr().out)["workloads"]}
    assert {"a-wait", "c-wait"} <= names
    # The current context is the dead one: without --context the same command fails.
    assert main(["--kubeconfig", str(kc), "forecast", "--timeout", "5s"]) == 1
    capsys.readouterr()


def test_namespace_before_the_command_filters_it(kc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-n", "team-c", "--kubeconfig", str(kc), "--context", "sim", "forecast", "-o", "json",
                 "--timeout", "20s"]) == 0
    rows = json.loads(capsys.readouterr().out)["workloads"]
    assert rows and {w["namespace"] for w in rows} == {"team-c"}


def test_the_commands_own_option_wins_over_the_one_before_it(kc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--context", "dead", "--kubeconfig", str(kc), "forecast", "--context", "sim", "-o", "json",
                 "--timeout", "20s"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"]


def test_read_only_refuses_an_action_and_sends_nothing(served: ServedCluster, kc: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--read-only", "--kubeconfig", str(kc), "--context", "sim", "hold", "team-a/a-wait", "--yes",
                 "--no-preview"])
    err = capsys.readouterr().err
    assert code == 1 and err.strip() == "kueuetop: refusing to hold team-a/a-wait: read-only (--read-only)"
    assert _active(served, "a-wait")


def test_read_only_context_guards_the_context_the_action_would_use(served: ServedCluster, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    current_sim = _kubeconfig(tmp_path / "current-sim.kubeconfig", served.url, current="sim")
    # No --context: the action would act on the current context, which is guarded.
    assert main(["--read-only-context", "sim", "--kubeconfig", str(current_sim), "hold", "team-a/a-wait",
                 "--yes", "--no-preview"]) == 1
    assert "context sim is read-only (--read-only-context)" in capsys.readouterr().err
    assert _active(served, "a-wait")
    # Another context guarded: the hold goes through.
    try:
        assert main(["--read-only-context", "dead", "--kubeconfig", str(current_sim), "hold", "team-a/a-wait",
                     "--yes", "--no-preview", "--wait-timeout", "20s"]) == 0, capsys.readouterr().err
        assert not _active(served, "a-wait")
    finally:
        _resume(served, "a-wait")


@pytest.mark.parametrize(("argv", "says"), [
    (["--theme", "mono", "snapshot"], "--theme applies to the console, not to `kueuetop snapshot`"),
    (["--demo", "dws", "--no-forecast", "forecast"], "--demo, --no-forecast apply to the console, "
                                                     "not to `kueuetop forecast`"),
    (["--prometheus", "http://x", "forecast"], "--prometheus applies to the console, not to `kueuetop forecast`"),
    (["--context", "a", "--context", "b", "hold", "team-a/w", "--yes"],
     "`kueuetop hold` reads one cluster: give one --context"),
    (["--demo", "forecast"], "`forecast` is a command, not a scenario"),
])
def test_an_option_the_command_cannot_use_is_a_one_line_usage_error(argv: list[str], says: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kueuetop: ") and len(err.strip().splitlines()) == 1 and says in err


def test_contexts_before_clusters_are_read_with_its_own(kc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--kubeconfig", str(kc), "--context", "sim", "clusters", "--context", "dead", "-o", "json",
          "--timeout", "20s"])
    doc = json.loads(capsys.readouterr().out)
    seen = {c["context"]: c["reachable"] for c in doc["clusters"]}
    assert seen == {"sim": True, "dead": False}


def test_the_console_on_a_read_only_context_is_read_only(served: ServedCluster, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One context given (or the current one) and listed in --read-only-context: the console
    opens read-only, as the console across several contexts already did for each."""
    from kueuetop.tui.app import KueuetopApp

    opened: list[bool] = []

    def run(app: KueuetopApp, *args: object, **kwargs: object) -> int:
        opened.append(app.read_only)
        return 0

    monkeypatch.setattr(KueuetopApp, "run", run)
    current_sim = _kubeconfig(tmp_path / "current-sim.kubeconfig", served.url, current="sim")
    p = argparse.ArgumentParser()
    add_console_options(p)
    for argv in (["--read-only-context", "sim"], ["--read-only-context", "dead"],
                 ["--read-only-context", "sim", "--context", "sim"]):
        run_console(p.parse_args(["--kubeconfig", str(current_sim), "--no-forecast", *argv]))
    assert opened == [True, False, True]


def test_with_several_kubeconfig_files_an_action_uses_the_context_kubectl_would(
        served: ServedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """KUBECONFIG=a:b, a's current-context `sim`, b's `dead`: kubectl, the read commands and now
    the actions use a's (the first file's wins). The kubernetes library's own loader took b's:
    the access check read one cluster and the PATCH went to the other."""
    first = _kubeconfig(tmp_path / "a.kubeconfig", served.url, current="sim")
    second = _kubeconfig(tmp_path / "b.kubeconfig", served.url, current="dead")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    try:
        assert main(["hold", "team-a/a-wait", "--yes", "--wait-timeout", "20s"]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert not _active(served, "a-wait")
        assert f"hold team-a/a-wait on sim ({served.url})" in out  # the preview names where it acts
        # --read-only-context guards that same context.
        assert main(["--read-only-context", "sim", "resume", "team-a/a-wait", "--yes"]) == 1
        assert "context sim is read-only" in capsys.readouterr().err
    finally:
        _resume(served, "a-wait")


@pytest.mark.parametrize(("argv", "says"), [
    (["explain", "team-a/w", "--at", "2m"], "explain: --at needs --scenario"),
    (["explain", "team-a/w", "--scenario", "refarch", "--context", "c"],
     "--context applies to a live cluster, not to --scenario"),
    (["forecast", "--scenario", "refarch", "--kubeconfig", "k", "--context", "c"],
     "--kubeconfig, --context apply to a live cluster, not to --scenario"),
    (["forecast", "--replay", "r.ktrec", "--context", "c"], "--context applies to a live cluster, not to --replay"),
    (["snapshot", "--replay", "r.ktrec", "--prometheus", "http://p"],
     "--prometheus applies to a live cluster, not to --replay"),
    (["forecast", "team-a/w", "-n", "team-b"], "workload team-a/w is not in namespace team-b (-n)"),
    (["record", "--for", "0s"], "more than 0 (leave the option out for no limit)"),
])
def test_an_option_the_source_ignores_is_a_one_line_usage_error(argv: list[str], says: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors exit
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("kueuetop: ") and len(err.strip().splitlines()) == 1 and says in err, err


def test_a_namespace_without_pending_work_is_named(kc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = ["--kubeconfig", str(kc), "--context", "sim", "--timeout", "20s"]
    assert main(["forecast", "-n", "team-nope", *live]) == 0
    assert "No pending workloads in namespace team-nope." in capsys.readouterr().out
    assert main(["forecast", "-n", "team-nope", "-o", "json", *live]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["namespace"] == "team-nope" and doc["workloads"] == []
    # --at-most 0 lists none and says how many it left out, not that there are none.
    assert main(["forecast", "--at-most", "0", *live]) == 0
    out = capsys.readouterr().out
    assert "No pending workloads" not in out and "more not shown (--at-most 0)" in out
