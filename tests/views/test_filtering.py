import random

from rich.text import Text

from kueuetop.views.filtering import parse_filter, sort_rows
from kueuetop.views.rows import Row, age, cell


def _row(name: str, ns: str, state: str, prio: int, labels: dict[str, str] | None = None) -> Row:
    return Row((ns, name), (cell(ns), cell(name), cell(state)), sort={"name": name, "priority": -prio},
               labels=labels or {}, state=state.lower())


ROWS = [_row("train-a", "team-a", "Pending", 10, {"app": "llm"}), _row("train-b", "team-b", "Admitted", 20),
        _row("eval-c", "team-a", "Inactive", 5, {"app": "eval"})]


def names(rows: list[Row]) -> list[str]:
    return [r.key[1] for r in rows]  # type: ignore[index]


def test_regex_inverse_labels_state() -> None:
    assert names(parse_filter("train").apply(ROWS)) == ["train-a", "train-b"]
    assert names(parse_filter("!team-a").apply(ROWS)) == ["train-b"]
    assert names(parse_filter("-l app=llm").apply(ROWS)) == ["train-a"]
    assert names(parse_filter("-l app").apply(ROWS)) == ["train-a", "eval-c"]
    assert names(parse_filter("-l !app").apply(ROWS)) == ["train-b"]
    assert names(parse_filter("-l app!=llm").apply(ROWS)) == ["train-b", "eval-c"]
    assert names(parse_filter("state:pending").apply(ROWS)) == ["train-a"]
    assert names(parse_filter("team-a state:inactive").apply(ROWS)) == ["eval-c"]
    assert names(parse_filter("[unclosed").apply(ROWS)) == []  # a bad regex matches literally
    assert names(parse_filter("").apply(ROWS)) == ["train-a", "train-b", "eval-c"]


def test_sorts_missing_last_and_reverse() -> None:
    rows = [*ROWS, Row(("x", "zz"), (Text("zz"),), sort={"name": "zz"})]
    assert names(sort_rows(rows, "priority")) == ["train-b", "train-a", "eval-c", "zz"]
    assert names(sort_rows(rows, "priority", reverse=True)) == ["eval-c", "train-a", "train-b", "zz"]
    assert names(sort_rows(rows, "name")) == ["eval-c", "train-a", "train-b", "zz"]


def test_cells_are_clean_plain_text() -> None:
    c = cell("\x1b[31mred[/]\x07 [bold]x")
    assert "\x1b" not in c.plain and "\x07" not in c.plain
    assert "[bold]" in c.plain  # markup stays literal text
    assert age(59) == "59s" and age(3700) == "1h1m" and age(None) == "-"


def test_sort_cache_orders_as_sort_ids_and_forgets_changed_names() -> None:
    import random

    from kueuetop.views.filtering import SortCache, sort_ids
    rnd = random.Random(3)
    rows = {f"r{i}": Row(f"r{i}", (cell(i),), sort={"name": f"n{rnd.randrange(50)}", "size": rnd.choice([None, 1, 2, 3]),
                                                     "prio": rnd.randrange(5)}) for i in range(300)}
    cache = SortCache()
    for name in ("size", "prio", "name", None):
        for reverse in (False, True):
            assert cache.sorted_ids(rows, name, reverse) == sort_ids(rows, name, reverse)
    rows["r1"] = Row("r1", (cell(1),), sort={"name": "n0", "size": 9, "prio": 0})
    cache.invalidate(["size"])
    assert cache.sorted_ids(rows, "size", True) == sort_ids(rows, "size", True)
    cache.invalidate(["name"])  # the tiebreak moved: every order goes
    assert cache.sorted_ids(rows, "prio") == sort_ids(rows, "prio")


def test_typing_on_narrows_only_plain_words() -> None:
    from kueuetop.views.filtering import narrows, widens
    assert narrows("trai", "train") and widens("train", "trai") and narrows("", "t") is False
    assert not narrows("tr", "tr|x") and not narrows("a", "a*") and not narrows("-l", "-la")
    assert not narrows("state", "state:p") and not narrows("tr", "tr ain")
    one = parse_filter("TRAIN")
    assert one.search is not None and names(one.apply(ROWS)) == ["train-a", "train-b"]
    assert {rid for rid, ok in one.passes({str(r.key): r for r in ROWS}, [str(r.key) for r in ROWS]).items() if ok} \
        == {str(r.key) for r in ROWS if r.key[1].startswith("train")}  # type: ignore[index]
    assert parse_filter("!train").search is None and parse_filter("a b").search is None


def test_sort_ids_matches_a_plain_sort_for_every_column_and_direction() -> None:
    import random

    from kueuetop.views.filtering import sort_ids

    rng = random.Random(7)
    rows = {}
    for i in range(3000):
        name = f"wl-{rng.randint(0, 500):04d}"  # repeated names: ties on the tiebreak too
        sort = {"name": name, "priority": rng.choice([None, -100, 0, -1000]), "age": -rng.random(),
                "status": rng.choice(["Pending", "Admitted"]), "position": rng.choice([None, 1, 2, 3])}
        rows[f"id-{i:05d}"] = Row(f"id-{i:05d}", (cell(name),), sort=sort)
    for column in ("name", "priority", "age", "status", "position"):
        for reverse in (False, True):
            got = sort_ids(rows, column, reverse)
            assert sorted(got) == sorted(rows)  # a permutation: nothing lost or doubled
            present = [r for r in rows if rows[r].sort[column] is not None]
            missing = [r for r in rows if rows[r].sort[column] is None]
            # The reference: value (descending when reversed), then name, then id; missing values last.
            present.sort(key=lambda r: (rows[r].sort["name"], r))
            present.sort(key=lambda r: rows[r].sort[column], reverse=reverse)
            missing.sort(key=lambda r: (rows[r].sort["name"], r))
            assert got == present + missing, (column, reverse)


def _random_rows(rng: random.Random, n: int) -> dict[str, Row]:
    rows = {}
    for i in range(n):
        rows[f"id-{i:05d}"] = _random_row(rng, f"id-{i:05d}")
    return rows


def _random_row(rng: random.Random, rid: str) -> Row:
    # Few distinct values: long runs of ties, broken by the tiebreak (repeated too) and the id.
    sort = {"name": rng.choice([f"wl-{rng.randint(0, 40):03d}", None]),
            "status": rng.choice(["Pending", "Admitted", "Finished", None]),
            "position": rng.choice([None, 1, 2, 3, 10]), "wait": rng.choice([None, 0.5, 2.0, 7.25])}
    return Row(rid, (cell(rid),), sort=sort)


def test_patched_orders_equal_a_full_sort_after_random_changes() -> None:
    """Rows change values, come and go, in small and large batches: every patched order, both
    ways, is exactly what sorting every row again gives."""
    import random

    from kueuetop.views.filtering import PATCH_SMALL, patch_order, sort_ids

    rng = random.Random(11)
    rows = _random_rows(rng, 600)
    names_ = ("name", "status", "position", "wait")
    orders = {(n, r): sort_ids(rows, n, r) for n in names_ for r in (False, True)}
    for step in range(60):
        size = rng.choice([1, 3, PATCH_SMALL, PATCH_SMALL + 1, 200])
        moves = {}
        for _ in range(size):
            rid = f"id-{rng.randrange(700):05d}"
            old = moves[rid][0] if rid in moves else rows.get(rid)
            new = None if rid in rows and rng.random() < 0.15 else _random_row(rng, rid)
            moves[rid] = (old, new)
            if new is None:
                rows.pop(rid, None)
            else:
                rows[rid] = new
        for (n, r), order in orders.items():
            got = patch_order(order, rows, moves, n, r)
            assert got == sort_ids(rows, n, r), (step, n, r, size)
            orders[(n, r)] = got


def test_sort_cache_follows_moves_and_takes_only_orders_computed_since() -> None:
    import random

    from kueuetop.views.filtering import PATCH_SMALL, SortCache, sort_ids

    rng = random.Random(5)
    rows = _random_rows(rng, 1000)
    cache = SortCache()
    for n in ("status", "position", "name"):
        for r in (False, True):
            cache.sorted_ids(rows, n, r)
    generation = cache.generation
    snapshot = {("status", False): sort_ids(rows, "status"), ("wait", True): sort_ids(rows, "wait", True)}
    # A few status changes: every kept order is patched, none dropped.
    moves = {}
    for rid in rng.sample(sorted(rows), 5):
        old = rows[rid]
        rows[rid] = Row(rid, old.cells, sort={**old.sort, "status": rng.choice(["Pending", "Gone", None])})
        moves[rid] = (old, rows[rid])
    cache.moved(rows, moves, keep=("name", False))
    assert len(cache.missing(("status", "position", "name"))) == 0
    for n in ("status", "position", "name"):
        for r in (False, True):
            assert cache.cached(n, r) == sort_ids(rows, n, r)
    # More: the order on screen is patched, the others with moved values are dropped.
    moves = {}
    for rid in rng.sample(sorted(rows), PATCH_SMALL + 20):
        old = rows[rid]
        rows[rid] = Row(rid, old.cells, sort={**old.sort, "position": rng.choice([None, 4, 5])})
        moves[rid] = (old, rows[rid])
    cache.moved(rows, moves, keep=("position", True))
    assert cache.cached("position", True) == sort_ids(rows, "position", True)
    assert cache.cached("position", False) is None and cache.cached("status", False) is not None
    # Orders computed from the rows before: status moved since (not taken), wait did not.
    assert cache.install(snapshot, generation) == 1
    assert cache.cached("status", False) == sort_ids(rows, "status")  # still the patched one
    assert cache.cached("wait", True) == sort_ids(rows, "wait", True)
    # A row that comes makes every order computed before it stale.
    rows["new"] = _random_row(rng, "new")
    cache.moved(rows, {"new": (None, rows["new"])})
    assert cache.install({("position", False): sort_ids(rows, "position")}, generation) == 0


def test_one_plain_word_is_a_substring_test_that_agrees_with_the_regex() -> None:
    rows = [*ROWS, _row("Train-Z", "team-c", "Pending", 1), _row("ſtrain-k", "team-d", "Pending", 1),
            _row("tra.n", "team-e", "Pending", 1)]
    by_id = {str(r.key): r for r in rows}
    for text in ("TRAIN", "train-", "team-a", "strain", "tra.n", "a=b", "/x"):
        f = parse_filter(text)
        assert f.literal == (None if "." in text else text.lower())
        slow = {str(r.key): bool(f.predicates[0](r)) for r in rows}  # the regex itself
        assert f.passes(by_id, list(by_id)) == slow, text
    # The non-ASCII row goes to the regex, which folds `ſ` to `s` (a substring test would not).
    assert parse_filter("strain").passes(by_id, list(by_id))[str(("team-d", "ſtrain-k"))]
    assert parse_filter("tra.n").literal is None and parse_filter("!x").literal is None
    assert parse_filter("a b").literal is None and parse_filter("state:p").literal is None


def test_the_first_part_of_a_burst_patches_only_the_order_on_screen() -> None:
    import random

    from kueuetop.views.filtering import SortCache, sort_ids

    rng = random.Random(8)
    rows = _random_rows(rng, 500)
    cache = SortCache()
    for n in ("status", "position", "name"):
        for r in (False, True):
            cache.sorted_ids(rows, n, r)
    moves = {}
    for rid in rng.sample(sorted(rows), 5):  # few, but more follow: no patching off screen
        old = rows[rid]
        rows[rid] = Row(rid, old.cells, sort={**old.sort, "status": rng.choice(["Pending", "Gone", None])})
        moves[rid] = (old, rows[rid])
    cache.moved(rows, moves, keep=("status", True), more=True)
    assert cache.cached("status", True) == sort_ids(rows, "status", True)
    assert cache.cached("status", False) is None  # the rest of the burst would drop it anyway
    assert cache.cached("position", False) == sort_ids(rows, "position")  # not moved: kept


def test_orders_computed_together_equal_sort_ids() -> None:
    import random

    from kueuetop.views.filtering import sort_ids, sort_orders

    rng = random.Random(11)
    rows = _random_rows(rng, 800)
    wanted = [(n, r) for n in ("name", "status", "position", "wait", "absent") for r in (True, False)]
    for tiebreak in ("name", "position"):  # a tiebreak that is not a string, and one missing often
        got = sort_orders(rows, [*wanted, (None, False)], tiebreak)  # type: ignore[list-item]
        for (name, reverse), order in got.items():
            assert order == sort_ids(rows, name, reverse, tiebreak), (name, reverse, tiebreak)


def test_a_missing_order_from_the_kept_tiebreak_order_equals_sort_ids() -> None:
    import random

    from kueuetop.views.filtering import SortCache, sort_ids

    rng = random.Random(12)
    rows = _random_rows(rng, 700)
    cache = SortCache()
    cache.sorted_ids(rows, "name")  # the tiebreak order is kept
    for name in ("status", "position", "wait", "absent"):
        for reverse in (False, True):
            assert cache._from_tiebreak(rows, name, reverse) == sort_ids(rows, name, reverse), (name, reverse)
            assert cache.sorted_ids(rows, name, reverse) == sort_ids(rows, name, reverse)
    # A tiebreak that is not a string orders otherwise than (tiebreak, id): not used.
    by_position = SortCache(tiebreak="position")
    by_position.sorted_ids(rows, "position")
    assert by_position._from_tiebreak(rows, "status", False) is None
    assert by_position.sorted_ids(rows, "status") == sort_ids(rows, "status", tiebreak="position")
