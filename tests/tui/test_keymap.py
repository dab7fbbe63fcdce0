from textual.binding import Binding

from kueuetop.kueue.actions import DANGEROUS
from kueuetop.tui import keymap as K


def test_defaults_have_no_clashes_and_follow_k9s():
    km = K.load_keymap()
    assert km.problems == [] and K.clashes(km.keys) == []
    assert km.keys["command"] == ("colon",)
    assert km.keys["filter"] == ("slash",)
    assert km.keys["help"] == ("question_mark",)
    assert km.keys["back"] == ("escape",)
    assert km.keys["drill"] == ("enter",)
    assert km.keys["mark"] == ("space",)
    assert km.keys["sort.name"] == ("N",)
    # Actions that evict running work use ctrl keys and are flagged.
    for a in K.ACTIONS:
        if a.evicts:
            assert a.dangerous and all(k.startswith("ctrl+") for k in a.keys), a.id


def test_every_mutating_action_is_dangerous_and_says_what_it_needs():
    for a in K.ACTIONS:
        if a.id.split(".")[0] in ("workload", "clusterqueue", "localqueue") and a.id != "workload.explain":
            assert a.dangerous and a.needs is not None and a.needs.verb == "patch", a.id
    evicting = {a.action.split("'")[1] for a in K.ACTIONS if a.evicts}
    assert evicting == set(DANGEROUS)


def test_bindings_carry_ids_and_read_only_hides_dangerous():
    km = K.load_keymap()
    b = {x.id: x for x in km.bindings("workloads")}
    assert isinstance(b["workload.hold"], Binding)
    assert b["workload.hold"].key == "h" and b["workload.hold"].action == "workload_action('hold')"
    assert "patch workloads.kueue.x-k8s.io" in b["workload.hold"].tooltip
    ro = {x.id for x in km.bindings("workloads", read_only=True)}
    assert "workload.hold" not in ro and "workload.preempt" not in ro
    assert "workload.explain" in ro


def test_check_action_hides_greys_or_enables():
    denied = {"patch workloads.kueue.x-k8s.io": "forbidden by RBAC"}
    assert K.check("workload.hold", read_only=True) is False
    assert K.check("workload.hold", read_only=False, denied=denied) is None
    assert K.check("workload.hold", read_only=False) is True
    assert K.check("filter", read_only=True, denied=denied) is True
    assert "needs 'patch workloads.kueue.x-k8s.io'" in K.disabled_reason("workload.hold", denied)


def test_remap_applies_and_feeds_textual_keymap():
    km = K.load_keymap({"workload.hold": "ctrl-h", "quit": ["q", "ctrl+q"]})
    assert km.problems == []
    assert km.keys["workload.hold"] == ("ctrl+h",)
    assert km.textual_keymap() == {"workload.hold": "ctrl+h", "quit": "q,ctrl+q"}
    assert {b.id: b.key for b in km.bindings("workloads")}["workload.hold"] == "ctrl+h"


def test_invalid_remaps_give_messages_and_keep_defaults():
    km = K.load_keymap({
        "no.such": "x",
        "sort.name": "hyper+n",
        "filter": "",
        "workload.hold": "r",  # same scope as workload.requeue
        "quit": "Q",  # global vs workloads' sort.position
    })
    msgs = "\n".join(km.problems)
    assert "no.such: unknown action id" in msgs
    assert "sort.name: unknown modifier 'hyper'" in msgs
    assert "filter: empty key" in msgs
    assert "workload.hold: key 'r' is already bound to 'workload.requeue'" in msgs
    assert "quit: key 'Q' is already bound to 'sort.position'" in msgs
    assert km.keys["workload.hold"] == ("h",) and km.keys["quit"] == ("ctrl+q",)
    assert km.keys["sort.name"] == ("N",) and km.keys["filter"] == ("slash",)
    assert K.clashes(km.keys) == []


def test_same_key_in_different_views_is_fine():
    km = K.load_keymap({"heatmap.metric": "h"})  # 'h' is hold in workloads, not in gpus
    assert km.problems == []


def test_key_normalisation():
    assert K.normalize_key("Ctrl-D") == "ctrl+d"
    assert K.normalize_key("?") == "question_mark"
    assert K.normalize_key("shift+o") == "O"
    assert K.normalize_key("esc") == "escape"


def test_keymap_file(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[keys]\n"workload.hold" = "H"\n"nope" = "z"\n')
    km = K.load_keymap_file(cfg)
    assert km.keys["workload.hold"] == ("H",)
    assert len(km.problems) == 1 and str(cfg) in km.problems[0] and "nope" in km.problems[0]
    assert K.load_keymap_file(tmp_path / "missing.toml").problems == []
    cfg.write_text("[keys\n")
    assert "cannot read keys" in K.load_keymap_file(cfg).problems[0]


def test_command_aliases():
    for alias, view in [("wl", "workloads"), ("workloads", "workloads"), ("cq", "clusterqueues"),
                        ("lq", "localqueues"), ("cohorts", "cohorts"), ("rf", "flavors"),
                        ("nodes", "nodes"), ("gpus", "gpus"), ("overview", "overview")]:
        assert K.resolve_command(f":{alias}") == K.Command("view", view), alias
    assert K.resolve_command(":wl team-a") == K.Command("view", "workloads", "team-a")
    assert K.resolve_command(":q").kind == "quit"
    assert K.resolve_command(":nonsense") is None
    assert "cq" in K.command_words()
