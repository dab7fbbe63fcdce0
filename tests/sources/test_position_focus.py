"""Queue positions are polled only where they can change and where someone looks at them."""

from types import SimpleNamespace

from kueuetop.sources.kube import VisibilityPoller
from kueuetop.store import Store
from kueuetop.store import events as K


class QueueStore:
    """Just what the poller reads from a store: ClusterQueues with pending counts."""

    def __init__(self, pending: dict[str, int]) -> None:
        self.pending = pending
        self.position_focus = None
        self.workloads: dict = {}
        self.local_queues: dict = {}

    def keys(self, kind):
        return [("", cq) for cq in self.pending] if kind == K.CLUSTER_QUEUES else []

    def queue_counts(self, cq):
        return SimpleNamespace(pending=self.pending[cq])

    def positions(self, cq):
        return None

    def get(self, kind, key):
        return (self.workloads if kind == K.WORKLOADS else self.local_queues).get(key)

    def subscribe(self, cb, stage=0):
        self.cb = cb
        return lambda: None

    def set_source_state(self, *a, **kw):
        pass


def poller(store) -> VisibilityPoller:
    return VisibilityPoller(api=None, version="v1beta2", store=store, sink=lambda ev: None, max_per_cycle=10)


def test_first_sweep_then_only_changed_queues():
    store = QueueStore({"a": 3, "b": 2, "c": 0})
    p = poller(store)
    assert sorted(p._due()) == ["a", "b"]  # never polled, with pending work
    p._polled.update({"a": 1e18, "b": 1e18})  # just polled
    assert p._due() == [] and p.swept()
    # a status write that doesn't change the pending set or priority does not trigger a poll
    wl = SimpleNamespace(queue_name="lq", has_quota_reservation=False, is_finished=False, active=True,
                         effective_priority=5, admission=None)
    store.local_queues[("ns", "lq")] = SimpleNamespace(cluster_queue="b")
    store.workloads[("ns", "w")] = wl
    store.cb(_changes({K.WORKLOADS: {("ns", "w")}}))
    assert p._due() == ["b"]  # a new pending workload in b
    p._polled["b"] = 1e18
    store.cb(_changes({K.WORKLOADS: {("ns", "w")}}))  # same signature again
    assert p._due() == []
    store.workloads[("ns", "w")] = SimpleNamespace(**{**wl.__dict__, "effective_priority": 50})
    store.cb(_changes({K.WORKLOADS: {("ns", "w")}}))
    assert p._due() == ["b"]  # priority changed: order may have changed


def test_focus_limits_polling_to_queues_on_screen():
    store = QueueStore({"a": 3, "b": 2, "c": 1})
    store.position_focus = frozenset({"b"})
    p = poller(store)
    assert p._due() == ["b"]
    store.position_focus = frozenset()
    assert p._due() == [] and p.swept()


def test_store_focus_setter():
    s = Store()
    assert s.position_focus is None
    s.set_position_focus({"x"})
    assert s.position_focus == frozenset({"x"})
    s.set_position_focus(None)
    assert s.position_focus is None


def _changes(keys):
    from kueuetop.store.events import Changes

    return Changes({k: frozenset(v) for k, v in keys.items()})
