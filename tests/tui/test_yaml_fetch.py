"""The YAML page and the workload detail's YAML come from the API server (the store keeps no
wire dicts), fetched in a worker, with a clear line when the server cannot be reached."""

from __future__ import annotations

import socket

from kubernetes.client import ApiClient, Configuration
from textual.pilot import Pilot

from kueuetop.store import events as K
from kueuetop.tui.detail import WorkloadDetailScreen, detail_text
from kueuetop.tui.yaml_view import ObjectYamlScreen
from tests.tui.conftest import Live
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until


def _dead_api() -> ApiClient:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.retries = 0
    return ApiClient(cfg)


def test_yaml_page_shows_the_object_fetched_from_the_server(live: Live) -> None:
    key = sorted(live.store.keys(K.WORKLOADS))[0]
    assert live.store.raw(K.WORKLOADS, key) is None  # nothing to show without asking the server
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        app.show_yaml(K.WORKLOADS, key)
        assert await until(pilot, lambda: "kind: Workload" in screen_text(app)), screen_text(app)
        text = screen_text(app)
        assert f"name: {key[1]}" in text and f"namespace: {key[0]}" in text and "podSets:" in text
        assert isinstance(app.screen, ObjectYamlScreen) and app.screen.obj is not None
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1)
        # Cluster-scoped kinds too (the Nodes view's `y`).
        node = sorted(live.store.keys(K.NODES))[0]
        app.show_yaml(K.NODES, node[1])
        assert await until(pilot, lambda: "kind: Node" in screen_text(app)), screen_text(app)

    run(app, body)


def test_yaml_page_says_why_when_the_server_cannot_be_reached(live: Live) -> None:
    key = sorted(live.store.keys(K.WORKLOADS))[0]
    dead = _dead_api()
    app = make_app(live.store, live, initial_view="workloads")
    app.api = dead

    async def body(pilot: Pilot[int]) -> None:
        app.show_yaml(K.WORKLOADS, key)
        assert await until(pilot, lambda: "cannot fetch the object" in screen_text(app)), screen_text(app)
        assert "kind: Workload" not in screen_text(app)
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1)

    try:
        run(app, body)
    finally:
        dead.close()


def test_workload_detail_yaml_is_fetched(live: Live) -> None:
    key = sorted(live.store.keys(K.WORKLOADS))[0]
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        app.open_workload(key)
        assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen) and app.screen.raw is not None)
        screen = app.screen
        assert isinstance(screen, WorkloadDetailScreen)
        assert screen.raw is not None and screen.raw["metadata"]["name"] == key[1]
        text = detail_text(app.ctx, key, screen.events, screen.events_error, raw=screen.raw, raw_error=screen.raw_error).plain
        yaml_part = text[text.index("\nYAML\n"):]
        assert "kind: Workload" in yaml_part and f"name: {key[1]}" in yaml_part

    run(app, body)


def test_workload_detail_says_why_its_yaml_is_missing(live: Live) -> None:
    key = sorted(live.store.keys(K.WORKLOADS))[0]
    dead = _dead_api()
    app = make_app(live.store, live, initial_view="workloads")
    app.api = dead

    async def body(pilot: Pilot[int]) -> None:
        app.open_workload(key)
        assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen) and app.screen.raw_error)
        screen = app.screen
        assert isinstance(screen, WorkloadDetailScreen)
        text = detail_text(app.ctx, key, screen.events, screen.events_error, raw=screen.raw, raw_error=screen.raw_error).plain
        assert "YAML unavailable:" in text and "kind: Workload" not in text

    try:
        run(app, body)
    finally:
        dead.close()
