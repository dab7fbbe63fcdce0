"""Views against the served refarch cluster: columns that give way at 80 columns (and ctrl+w),
the nodes view's flavor / capacity type / age / taints, the ClusterQueue history pane."""

from __future__ import annotations

from textual.pilot import Pilot

from kueuetop.kueue.core import Node
from kueuetop.kueue.meta import Meta
from kueuetop.store import events as K
from kueuetop.tui.views.base import TableView
from kueuetop.tui.views.fleet import capacity_type
from tests.tui.conftest import Live
from tests.tui.screen_text import screen_text
from tests.tui.test_app import column, make_app, run, table_cells, until


def _header(app, view: str) -> list[str]:  # type: ignore[no-untyped-def]
    tv = app.main.query_one(f"#{view}", TableView)
    return list(tv.table.shown_columns)


def test_workloads_at_80_columns_keep_name_state_and_reason(live: Live) -> None:
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: table_cells(app, "workloads"))
        await pilot.pause()
        text = screen_text(app)
        header = next(line for line in text.splitlines() if "NAME" in line and "NAMESPACE" in line)
        assert "STATE" in header and "REASON" in header, header
        assert "LQ" not in header.split() and "FLAVORS" not in header
        states = {s for s in column(app, "workloads", "STATE")}
        assert any(s in text for s in states)  # the state of the rows is on screen, not off to the right
        assert "columns (^w: wide)" in text
        await pilot.press("ctrl+w")
        assert await until(pilot, lambda: "LQ" in _header(app, "workloads"))
        assert _header(app, "workloads") == list(app.main.query_one("#workloads", TableView).COLUMNS)
        assert await until(pilot, lambda: "^w: wide" not in screen_text(app))
        await pilot.press("ctrl+w")
        assert await until(pilot, lambda: "LQ" not in _header(app, "workloads"))

    run(app, body, (80, 24))


def test_nodes_show_flavor_capacity_type_age_and_taints(live: Live) -> None:
    app = make_app(live.store, live, initial_view="nodes")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: any("reserved-np" in r[0] for r in table_cells(app, "nodes")))
        rows = {r[0]: r for r in table_cells(app, "nodes")}
        names = list(app.main.query_one("#nodes", TableView).COLUMNS)
        by = {n: dict(zip(names, r, strict=True)) for n, r in rows.items()}
        # Capacity type and flavor follow the pool's labels: every node present is checked (spot and
        # on-demand pools may not have scaled up yet at this point of the scenario).
        expect = {"reserved-np": ("reserved", "gpu-l4-reserved", "reserved=true:NoSchedule"),
                  "spot-np": ("spot", "gpu-l4-spot", "spot=true:NoSchedule"),
                  "ondemand-np": ("on-demand", "gpu-l4-ondemand", "ondemand=true:NoSchedule"),
                  "default-pool": ("on-demand", "-", "-")}
        # The DWS wave (42m50s in) adds dws-flavor, which has no nodeLabels: it matches any node and
        # is named where no more specific flavor does (fleet.node_flavors), as on default-pool.
        # The package's cluster may have reached it before the rows were read, or since.
        dws = any(getattr(f, "name", "") == "dws-flavor" for f in live.store.objects(K.RESOURCE_FLAVORS).values())
        seen = set()
        for v in by.values():
            if v["POOL"].endswith("-compact"):
                # Auto-provisioned per compact job (16 minutes in, or sooner on a slow machine).
                expect[v["POOL"]] = ("spot", "gpu-a100-compact-spot", "")  # taints: the job template's
            capacity, flavor, taint = expect[v["POOL"]]
            if dws and v["POOL"] == "default-pool" and v["FLAVOR"] == "dws-flavor":
                flavor = "dws-flavor"
            assert (v["CAPACITY"], v["FLAVOR"]) == (capacity, flavor), v
            assert v["TAINTS"].startswith(taint), v
            assert v["AGE"][-1] in "smhd", v
            seen.add(v["POOL"])
        assert {"reserved-np", "default-pool"} <= seen
        await pilot.press("S")  # sorts still work on the wider table
        assert await until(pilot, lambda: table_cells(app, "nodes"))

    run(app, body)


def test_capacity_type_from_each_providers_labels() -> None:
    assert capacity_type(Node(meta=Meta(name="n"))) == "on-demand"
    assert capacity_type(Node(meta=Meta(name="n", labels={"cloud.google.com/gke-spot": "true"}))) == "spot"
    assert capacity_type(Node(meta=Meta(name="n", labels={"karpenter.sh/capacity-type": "spot"}))) == "spot"
    assert capacity_type(Node(meta=Meta(name="n", labels={"karpenter.sh/capacity-type": "reserved"}))) == "reserved"
    assert capacity_type(Node(meta=Meta(name="n", labels={"eks.amazonaws.com/capacityType": "SPOT"}))) == "spot"
    assert capacity_type(Node(meta=Meta(name="n", labels={"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK"}))) \
        == "reserved"
    assert capacity_type(Node(meta=Meta(name="n", labels={"eks.amazonaws.com/capacityType": "ON_DEMAND"}))) \
        == "on-demand"
    assert capacity_type(Node(meta=Meta(name="n", labels={"kubernetes.azure.com/scalesetpriority": "spot"}))) \
        == "spot"
    assert capacity_type(Node(meta=Meta(name="n", labels={"cloud.google.com/reservation-name": "r1"}))) \
        == "reserved"
    assert capacity_type(Node(meta=Meta(name="n", labels={"cloud.google.com/gke-queued": "true"}))) == "queued"
    assert capacity_type(Node(meta=Meta(name="n", labels={"cloud.google.com/gke-flex-start": "true"}))) \
        == "flex-start"


def test_cluster_queue_history_beside_quota_and_switched_when_narrow(live: Live) -> None:
    wide = make_app(live.store, live, initial_view="clusterqueues")

    async def body_wide(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: table_cells(wide, "clusterqueues"))
        cq = wide.main.query_one("#clusterqueues", TableView).cursor_row().key
        # The history's chart (its "pending" and "admitted" series) is drawn once its data is in.
        assert await until(pilot, lambda: all(s in screen_text(wide) for s in (
            f"cq/{cq}", f"{cq} quota", "pending", "admitted"))), screen_text(wide)

    run(wide, body_wide, (160, 48))
    narrow = make_app(live.store, live, initial_view="clusterqueues")

    async def body_narrow(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: table_cells(narrow, "clusterqueues"))
        cq = narrow.main.query_one("#clusterqueues", TableView).cursor_row().key
        assert await until(pilot, lambda: f"{cq} quota" in screen_text(narrow))
        assert f"cq/{cq}" not in screen_text(narrow)
        await pilot.press("c")
        assert await until(pilot, lambda: f"cq/{cq}" in screen_text(narrow))
        assert f"{cq} quota" not in screen_text(narrow)
        await pilot.press("c")
        assert await until(pilot, lambda: f"{cq} quota" in screen_text(narrow))

    run(narrow, body_narrow, (80, 24))


def test_cohorts_tree_with_pooled_quota_member_queues_and_yaml(live: Live) -> None:
    app = make_app(live.store, live, initial_view="cohorts")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: any(r[0] == "team-a-b" for r in table_cells(app, "cohorts")))
        rows = table_cells(app, "cohorts")
        names = [r[0] for r in rows]
        # Tree order: each cohort, then its ClusterQueues indented under it.
        i = names.index("team-a-b")
        assert names[i + 1].startswith("  cq-team-a-") and rows[i + 1][1] == "cq" and rows[i][1] == "cohort"
        members = [n.strip() for n in names[i + 1:] if n.startswith("  ")][:6]
        assert len(members) == 6 and all(m.startswith(("cq-team-a-", "cq-team-b-")) for m in members)
        # The cohort's quota is its members' quota added up (refarch: 44 GPUs per pair of teams).
        quota = column(app, "cohorts", "QUOTA")[i]
        assert quota.endswith("/44"), quota
        assert await until(pilot, lambda: "team-a-b: pooled quota of 6 ClusterQueues" in screen_text(app))
        assert "quota: nvidia.com/gpu" in screen_text(app)
        await pilot.press("down")
        assert await until(pilot, lambda: f"{members[0]} in cohort team-a-b" in screen_text(app))
        await pilot.press("y")
        assert await until(pilot, lambda: "kind: ClusterQueue" in screen_text(app))

    run(app, body)
