"""The table model without Textual: keyed rebuilds, sorts, the `/` filter, marks, change batches."""

import random
import subprocess
import sys
from collections.abc import Hashable

from kueuetop.views.filtering import parse_filter, sort_ids
from kueuetop.views.rows import Row, cell
from kueuetop.views.table_model import LATER_OVER, MAX_DIRTY, TableModel, row_id


def _row(key: str, size: int, team: str) -> Row:
    return Row(key, (cell(key), cell(team), cell(size)), sort={"name": key, "size": size, "status": team},
               labels={"team": team}, state="pending" if size % 2 else "admitted")


class Source:
    """What the model's rows are built from: key → (size, team); build counts per key."""

    def __init__(self, data: dict[str, tuple[int, str]]) -> None:
        self.data = data
        self.built: list[Hashable] = []

    def build_row(self, key: Hashable) -> Row | None:
        self.built.append(key)
        got = self.data.get(str(key))
        return _row(str(key), *got) if got is not None else None

    def all_rows(self) -> list[Row]:
        return [_row(k, *v) for k, v in self.data.items()]


def _expected(src: Source, model: TableModel) -> list[str]:
    """The order a full recompute gives: every row built, filtered, sorted."""
    rows = {row_id(r.key): r for r in src.all_rows()}
    f = parse_filter(model.filter.text)
    return [rid for rid in sort_ids(rows, model.sort_name, model.sort_reverse) if f(rows[rid])]


def test_keyed_changes_sorts_filters_and_marks_equal_a_full_recompute() -> None:
    """Random rounds of changed keys (some left for after the frame), sort keys, filter texts
    typed and erased, orders computed ahead from older rows: the order shown is always the one
    a full rebuild gives, and only changed keys were built."""
    rng = random.Random(7)
    teams = ["team-a", "team-b", "ml", "infra"]
    src = Source({f"w{i:04d}": (rng.randrange(30), rng.choice(teams)) for i in range(900)})
    model = TableModel({"things"}, "name", ("name", "size"), marks=True)
    model.replace_all(src.all_rows())
    model.take_changes()  # the first full build done
    assert model.refresh_order() == _expected(src, model)
    for step in range(80):
        op = rng.random()
        if op < 0.45:
            keys = set()
            for _ in range(rng.choice([1, 5, 40, LATER_OVER + 50])):
                k = f"w{rng.randrange(1000):04d}"
                keys.add(k)
                if k in src.data and rng.random() < 0.1:
                    del src.data[k]
                else:
                    src.data[k] = (rng.randrange(30), rng.choice(teams))
            model.note_changes({"things": keys, "other": {"x"}})
            full, dirty = model.take_changes()
            assert not full and dirty == {"things": keys}
            on_screen = model.keys_in(0, 20)
            now, later = model.split_batch(dirty["things"], on_screen)
            assert later == (len(keys) > LATER_OVER)
            src.built.clear()
            model.rebuild(now, src.build_row, check_sort=True, more=bool(model.later))
            while model.later:
                model.rebuild(model.take_later(), src.build_row, check_sort=True, more=bool(model.later))
            assert set(src.built) == keys
        elif op < 0.6:
            model.sort_by(rng.choice(["name", "size", "status"]))
        elif op < 0.8:
            model.set_filter(rng.choice(["", "team", "team-", "team-a", "w00", "!ml", "-l team=ml", "state:pending",
                                         "team-a 1", "W01"]))
        elif op < 0.9:
            work = model.ahead_input()
            if work is not None:
                rows, generation, wanted = work
                orders = model.compute_ahead(rows, wanted)
                # Rows change between the copy and the install: those orders must not be taken.
                if rng.random() < 0.5:
                    k = rng.choice(sorted(src.data))
                    src.data[k] = (rng.randrange(30), rng.choice(teams))
                    model.rebuild({k}, src.build_row, check_sort=True)
                model.install_ahead(orders, generation)
        else:
            shown = model.refresh_order()
            if shown:
                model.toggle_mark(rng.choice(shown))
        assert model.refresh_order() == _expected(src, model), step
        assert model.total == len(src.data)


def test_a_row_built_again_the_same_is_kept_and_not_reported() -> None:
    src = Source({"a": (1, "x"), "b": (2, "y")})
    model = TableModel(("k",))
    model.replace_all(src.all_rows())
    model.refresh_order()
    kept = model.rows["a"]
    changed, moved = model.rebuild({"a"}, src.build_row, check_sort=True)
    assert (changed, moved) == (set(), False) and model.rows["a"] is kept
    src.data["a"] = (1, "z")  # its team: a cell and the "status" sort value
    changed, moved = model.rebuild({"a"}, src.build_row, check_sort=True)
    assert changed == {"a"} and moved
    del src.data["b"]
    changed, moved = model.rebuild({"b"}, src.build_row, check_sort=True)
    assert changed == {"b"} and moved and model.refresh_order() == ["a"]


def test_rows_rebuilt_for_the_screen_keep_their_sort_values() -> None:
    """`check_sort` False (rows rebuilt because they are on screen): new cells, old sort values."""
    src = Source({"a": (1, "x"), "b": (2, "x")})
    model = TableModel(("k",), "size")
    model.replace_all(src.all_rows())
    assert model.refresh_order() == ["a", "b"]
    src.data["a"] = (5, "x")
    model.rebuild({"a"}, src.build_row, check_sort=False)
    assert model.rows["a"].cells[2].plain == "5" and model.rows["a"].sort["size"] == 1
    assert model.refresh_order() == ["a", "b"]


def test_too_many_changed_keys_ask_for_a_full_rebuild() -> None:
    model = TableModel(("k",))
    assert model.take_changes()[0]  # a new model builds everything first
    model.note_changes({"k": {1, 2}})
    assert model.take_changes() == (False, {"k": {1, 2}})
    model.note_changes({"k": set(range(MAX_DIRTY + 1))})
    assert model.take_changes() == (True, {})
    model.note_changes({"k": {3}})
    model.rebuild_all_next()
    assert model.take_changes() == (True, {})


def test_marks_selection_range_and_title() -> None:
    src = Source({f"r{i}": (i, "t") for i in range(6)})
    model = TableModel(("k",), marks=True)
    model.replace_all(src.all_rows())
    model.refresh_order()
    assert [r.key for r in model.selected("r2")] == ["r2"]  # nothing marked: the cursor's row
    assert not model.mark_range("r3")  # no mark yet: the caller marks the cursor's row
    assert model.toggle_mark("r1") and model.mark_range("r3")
    assert model.marks == {"r1", "r2", "r3"}
    model.set_filter("!r2")
    model.refresh_order()
    assert [r.key for r in model.selected("r0")] == ["r1", "r3"]  # marked and still shown
    model.sort_by("name")  # the same sort again: the other way round
    assert model.title_parts("Things") == ["Things (5/6)", "filter: !r2", "sort: name↓", "marked: 3"]
    assert not TableModel(("k",), marks=False).toggle_mark("r1")


def test_the_model_imports_no_textual() -> None:
    code = "import sys, kueuetop.views.table_model; print(any(m.split('.')[0] == 'textual' for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
