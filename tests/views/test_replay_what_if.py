"""The comparison of two runs of a recorded history (views/replay_what_if.py)."""

from __future__ import annotations

from kueuetop.views.replay_what_if import compare_starts, render_text, what_if_doc


def test_each_workload_is_classified_and_summed_per_namespace_and_queue() -> None:
    created = {("a", "w1"): 0.0, ("a", "w2"): 10.0, ("b", "w3"): 0.0, ("b", "w4"): 5.0, ("b", "w5"): 0.0}
    before = {("a", "w1"): 100.0, ("a", "w2"): 20.0, ("b", "w3"): 50.0, ("b", "w4"): 30.0}
    after = {("a", "w1"): 40.0, ("a", "w2"): 22.0, ("b", "w3"): 80.0, ("b", "w5"): 7.0}
    cqs = {k: "cq-" + k[0] for k in created}
    rows = compare_starts(created, before, after, cqs)
    assert [(r["name"], r["change"], r["deltaSeconds"]) for r in rows] == [
        ("w1", "sooner", -60.0), ("w2", "unchanged", 2.0), ("w3", "later", 30.0),
        ("w4", "noLongerStarts", None), ("w5", "starts", None)]
    assert rows[0]["before"] == {"startSeconds": 100.0, "waitSeconds": 100.0}
    assert rows[0]["after"] == {"startSeconds": 40.0, "waitSeconds": 40.0}
    assert rows[3]["after"] is None and rows[4]["before"] is None
    doc = what_if_doc("r.ktrec", 120.0, 121.0, ["nodes p=+1"], rows)
    by_ns = {g["namespace"]: g for g in doc["byNamespace"]}
    assert by_ns["a"]["savedTotalSeconds"] == 58.0 and by_ns["a"]["savedMedianSeconds"] == 29.0
    assert (by_ns["b"]["later"], by_ns["b"]["noLongerStarts"], by_ns["b"]["starts"]) == (1, 1, 1)
    assert by_ns["b"]["savedTotalSeconds"] == -30.0
    assert [g["clusterQueue"] for g in doc["byClusterQueue"]] == ["cq-a", "cq-b"]
    s = doc["summary"]
    assert (s["sooner"], s["later"], s["unchanged"], s["starts"], s["noLongerStarts"]) == (1, 1, 1, 1, 1)
    assert s["savedTotalSeconds"] == 28.0
    text = render_text(doc)
    assert "sooner by 1m" in text and "later by 30s" in text and "never starts" in text
    assert text.rstrip().endswith(s["text"])


def test_names_from_the_recording_never_draw_control_characters() -> None:
    key = ("ns", "evil\x1b[2Jname")
    rows = compare_starts({key: 0.0}, {key: 10.0}, {key: 1.0}, {key: "cq\x07"})
    text = render_text(what_if_doc("r\x1b.ktrec", 10.0, 11.0, ["nodes p=+1"], rows))
    assert "\x1b" not in text and "\x07" not in text
