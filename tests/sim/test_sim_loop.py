"""The simulated cluster's clock and loop: virtual jumps, real-time speed, steps in order."""

import threading
import time

from kueuetop.sim.clock import SimClock
from kueuetop.sim.cluster import SimCluster
from kueuetop.sim.scenarios.scenario import parse_scenario

SCENARIO = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot
  annotations: {kueuetop.io/at: "90s"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot
  labels: {tier: cheap}
  annotations: {kueuetop.io/at: "2m"}
"""


class TickController:
    """Wants to run every 25 simulated seconds; records when it ran."""

    name = "tick"

    def __init__(self, start: float) -> None:
        self.start = start
        self.ran: list[float] = []
        self.events = 0

    def on_event(self, ev) -> None:
        self.events += 1

    def reconcile(self, now: float) -> bool:
        if not self.ran or now - self.start >= self.ran[-1] + 25:
            self.ran.append(now - self.start)
        return False

    def next_wakeup(self, now: float) -> float | None:
        return self.start + (self.ran[-1] + 25 if self.ran else 0)


def test_virtual_time_jumps_to_events_and_applies_steps_in_order():
    clock = SimClock(1_000.0)
    cluster = SimCluster(parse_scenario(SCENARIO, "t.yaml"), clock)
    tick = TickController(clock.start)
    cluster.add_controller(tick)
    seen: list[float] = []
    cluster.run_for(150, on_step=lambda c: seen.append(c.sim_time))
    assert seen == sorted(seen), "simulated time ran backwards"
    assert tick.ran == [0, 25, 50, 75, 100, 125, 150]
    assert 90.0 in seen and 120.0 in seen  # jumped exactly to the step times
    flavor = cluster.store.get("kueue.x-k8s.io", "resourceflavors", None, "spot")
    assert flavor["metadata"]["labels"] == {"tier": "cheap"}  # the 2m document applied as an update
    assert tick.events == 3  # namespace added, flavor added, flavor modified
    assert clock.now() == 1_150.0


def test_real_time_speed_factor_and_wake_on_write():
    clock = SimClock(0.0, speed=100.0)
    cluster = SimCluster(parse_scenario("", "empty.yaml"), clock)
    t0 = time.monotonic()
    cluster.run_for(20)  # 20 simulated seconds at 100x ≈ 0.2 s of wall time
    wall = time.monotonic() - t0
    assert 0.15 <= wall < 2.0
    assert clock.now() >= 20.0
    # A client write wakes a sleeping loop at once rather than after its timeout.
    done = threading.Event()
    th = threading.Thread(target=lambda: (cluster.run_forever(), done.set()), daemon=True)
    th.start()
    cluster.store.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    cluster.stop()
    assert done.wait(2.0)


def test_refused_step_is_reported_not_fatal():
    clock = SimClock(0.0)
    cluster = SimCluster(parse_scenario(SCENARIO, "t.yaml"), clock)
    # Someone else created the namespace first: the scenario's create is refused with the API's
    # own message, the run goes on and the later steps still apply.
    cluster.store.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    cluster.run_for(200)
    assert len(cluster.errors) == 1
    assert "t.yaml#doc1" in cluster.errors[0] and "already exists" in cluster.errors[0]
    assert cluster.store.get("kueue.x-k8s.io", "resourceflavors", None, "spot")["metadata"]["labels"] == {"tier": "cheap"}


def test_drop_later_steps_keeps_what_was_applied_and_nothing_after():
    clock = SimClock(0.0)
    cluster = SimCluster(parse_scenario(SCENARIO, "t.yaml"), clock)
    later = parse_scenario(SCENARIO, "later.yaml").steps[1:2]  # the 90 s create, handed over late
    cluster.run_for(100)  # the namespace (0 s) and the flavor (90 s) are in; the 2 m update is not
    assert cluster.drop_later_steps() == 1
    cluster.add_steps(later)  # what `sim serve` would hand over later: ignored as well
    assert cluster.next_step_time() is None
    cluster.run_for(600, until_idle=True)
    flavor = cluster.store.get("kueue.x-k8s.io", "resourceflavors", None, "spot")
    assert "labels" not in flavor["metadata"], "a step after the drop was applied"
    assert cluster.errors == []  # the late create was never tried (it would be refused: exists)
    assert cluster.drop_later_steps() == 0


def test_pause_holds_real_time_still_and_resume_continues_without_a_jump():
    clock = SimClock(1_000.0, speed=50)
    time.sleep(0.05)
    clock.pause()
    held = clock.now()
    assert held > 1_000.0
    time.sleep(0.1)
    assert clock.now() == held  # 5 simulated seconds would have passed
    clock.resume()
    after = clock.now()
    assert held <= after < held + 2.0
    time.sleep(0.05)
    assert clock.now() > after
