"""Quitting the console while an action is in flight: it exits at once, the action is cancelled,
and the journal says it was interrupted; the next start reports what was left and how to finish.

The action's requests go through a fault proxy (tests/fault_proxy.py) that holds all traffic once
the preempt's first PATCH has landed, so its wait step is stuck in a read. The console's own
informers read the server directly. Waits are on conditions (app exited, action thread done).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from textual.pilot import Pilot

from kueuetop.actions.audit import read_audit
from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.serve import ServedCluster
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.keymap import load_keymap
from kueuetop.tui.screens import ConfirmScreen
from kueuetop.tui.themes import load_themes
from tests.fault_proxy import FaultProxy
from tests.tui.action_cluster import ADMIN_TOKEN, NS, Queues, Watch
from tests.tui.test_app import NO_USER, until
from tests.waiting import wait_until


@pytest.fixture
def proxy(cluster: ServedCluster) -> Iterator[FaultProxy]:
    with FaultProxy(cluster.url) as p:
        yield p


@pytest.fixture
def proxied_api(proxy: FaultProxy, tmp_path: Path) -> Iterator[client.ApiClient]:
    c = config.new_client_from_config(
        config_file=str(write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.url, token=ADMIN_TOKEN)))
    yield c
    c.close()


def console(w: Watch, api: client.ApiClient) -> KueuetopApp:
    return KueuetopApp(w.store, api=api, context="kueuetop-sim", themes=load_themes(user=NO_USER),
                       keymap=load_keymap(), check_rbac=False, initial_view="workloads")


def notes(app: KueuetopApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


def test_quit_during_a_preempt_exits_cancels_and_journals_it(admin: Watch, queues: Queues, proxy: FaultProxy,
                                                             proxied_api: client.ApiClient) -> None:
    n = queues.low_running_high_waiting()
    low = f"low-{n}"
    patched, stuck = threading.Event(), threading.Event()

    def rule(method: str, path: str) -> str:
        if method == "PATCH":
            patched.set()
        elif method == "GET" and patched.is_set() and path.endswith(f"/workloads/{low}") and not stuck.is_set():
            stuck.set()
            proxy.hold()  # the wait step's poll hangs: nothing moves until released
        return "pass"

    proxy.rule(rule)
    app = console(admin, proxied_api)
    done: dict[str, bool] = {}

    async def first(pilot: Pilot[int]) -> None:
        app.start_workload_action("preempt", [(NS, low)])
        assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 15)
        await pilot.press("y")
        assert await until(pilot, stuck.is_set, 20), "the preempt never reached its wait step"
        await pilot.press("q")
        # The app exits and the action's thread ends, without waiting out the held request.
        task = app._task
        assert task is not None
        for _ in range(200):
            if task.done():
                break
            await asyncio.sleep(0.05)
        done["app"] = task.done()
        # The worker journals the interruption as it ends (before the fix it sat in the held read).
        journaled = await asyncio.to_thread(wait_until, lambda: any(
            r.get("entry") == "outcome" and r.get("target") == f"{NS}/{low}" for r in read_audit()), 10)
        assert journaled, read_audit()
        done["worker"] = await asyncio.to_thread(app.runner.idle.wait, 10)

    async def main() -> None:
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            await pilot.pause()
            await first(pilot)

    asyncio.run(asyncio.wait_for(main(), 60))
    assert done == {"app": True, "worker": True}
    journal = [r for r in read_audit() if r.get("target") == f"{NS}/{low}"]
    assert [r["entry"] for r in journal] == ["intent", "step", "outcome"], journal
    out = journal[-1]
    assert out["result"] == "interrupted" and out["landed"] == "unknown"  # the read-back could not get through
    assert queues.wl(low)["spec"]["active"] is False  # the deactivation had landed

    # The next start, with the network back, reads it back and says what is left and how to finish.
    proxy.release()
    again = console(admin, proxied_api)

    async def second(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: any("interrupted action" in m for m in notes(again)), 20), notes(again)
        report = next(m for m in notes(again) if "interrupted action" in m)
        assert f"preempt {NS}/{low}" in report and "partly applied: held" in report
        assert f"`kueuetop resume {NS}/{low}`" in report

    async def main2() -> None:
        async with again.run_test(size=(160, 48), notifications=True) as pilot:
            await pilot.pause()
            await second(pilot)
            await pilot.press("q")

    asyncio.run(asyncio.wait_for(main2(), 60))
    assert [r["entry"] for r in read_audit() if r.get("target") == f"{NS}/{low}"][-1] == "reconciled"


def test_unwritable_audit_log_refuses_in_the_console(admin: Watch, queues: Queues, proxy: FaultProxy,
                                                     proxied_api: client.ApiClient, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    n = queues.low_running_high_waiting()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("KUEUETOP_STATE_DIR", str(blocker / "state"))  # can't be created
    app = console(admin, proxied_api)

    async def body(pilot: Pilot[int]) -> None:
        app.start_workload_action("hold", [(NS, f"low-{n}")])
        assert await until(pilot, lambda: any("refused" in m for m in notes(app)), 10), notes(app)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("not writable" in m for m in notes(app)), notes(app)
        await pilot.press("q")

    async def main() -> None:
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            await pilot.pause()
            await body(pilot)

    asyncio.run(asyncio.wait_for(main(), 60))
    assert [s for s in proxy.requests() if f"/workloads/low-{n}" in s.path] == []  # nothing about it was sent
    assert queues.holds_quota(f"low-{n}")
