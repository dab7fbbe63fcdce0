"""`/` filters and capital-letter sorts over rows, k9s style.

Filter syntax (terms are ANDed):
  regex        rows whose visible text matches (case-insensitive; a bad regex matches literally)
  !regex       rows whose text does not match
  -l k=v,k2    label selector: equality, `!=`, bare key (exists), `!key` (absent)
  state:WORD   rows in that state (pending, admitted, inactive, quotareserved, finished, …)
"""

from __future__ import annotations

import bisect
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from kueuetop.views.rows import Row

Predicate = Callable[[Row], bool]


@dataclass(frozen=True)
class RowFilter:
    text: str
    predicates: tuple[Predicate, ...]
    search: Callable[[str], object] | None = None  # the filter is this one regex over `Row.text`
    # … and that regex is this lower-case ASCII word, taken literally: on ASCII text a substring
    # test of `Row.lower` finds the same rows several times faster than the regex.
    literal: str | None = None

    def __call__(self, row: Row) -> bool:
        return all(p(row) for p in self.predicates)

    def passes(self, rows: Mapping[str, Row], ids: Iterable[str]) -> dict[str, bool]:
        """Which of `ids` pass (one call for many rows: the common one-regex case runs without
        a Python call per predicate)."""
        if self.literal is not None and self.search is not None:
            word, search = self.literal, self.search
            out: dict[str, bool] = {}
            for rid in ids:
                row = rows[rid]
                low = row._lower
                if low is None:
                    low = row.lower
                # Non-ASCII text: Unicode case folding is the regex's business.
                out[rid] = word in low if low.isascii() else search(row.text) is not None
            return out
        if self.search is not None:
            search = self.search
            return {rid: search(rows[rid].text) is not None for rid in ids}
        return {rid: self(rows[rid]) for rid in ids}

    def select(self, ids: Iterable[str], lowers: Iterable[str], rows: Mapping[str, Row]) -> list[str]:
        """The `ids` that pass a `literal` filter, `lowers` being their rows' `Row.lower` in the
        same order: one pass, no look-up per row (but for non-ASCII rows, left to the regex)."""
        word, search = self.literal, self.search
        assert word is not None and search is not None
        return [rid for rid, low in zip(ids, lowers, strict=True)
                if (word in low if low.isascii() else search(rows[rid].text) is not None)]

    def apply(self, rows: Iterable[Row]) -> list[Row]:
        return [r for r in rows if self(r)]


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(pattern), re.IGNORECASE)


def _label_terms(selector: str) -> list[Predicate]:
    out: list[Predicate] = []
    for term in (t.strip() for t in selector.split(",")):
        if not term:
            continue
        if "!=" in term:
            k, v = (s.strip() for s in term.split("!=", 1))
            out.append(lambda r, k=k, v=v: r.labels.get(k) != v)
        elif "=" in term:
            k, v = (s.strip() for s in term.split("=", 1))
            k = k.rstrip("=")
            v = v.lstrip("=")
            out.append(lambda r, k=k, v=v: r.labels.get(k) == v)
        elif term.startswith("!"):
            out.append(lambda r, k=term[1:]: k not in r.labels)
        else:
            out.append(lambda r, k=term: k in r.labels)
    return out


def parse_filter(text: str) -> RowFilter:
    try:
        words = shlex.split(text)
    except ValueError:  # an unbalanced quote: take the words as typed
        words = text.split()
    preds: list[Predicate] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-l" and i + 1 < len(words):
            preds += _label_terms(words[i + 1])
            i += 2
            continue
        if w.startswith("-l") and len(w) > 2:
            preds += _label_terms(w[2:])
        elif w.lower().startswith("state:") and len(w) > 6:
            want = w[6:].lower()
            preds.append(lambda r, want=want: any(s.startswith(want) for s in r.state.split()))
        elif w.startswith("!") and len(w) > 1:
            rx = _regex(w[1:])
            preds.append(lambda r, rx=rx: not rx.search(r.text))
        else:
            rx = _regex(w)
            preds.append(lambda r, rx=rx: bool(rx.search(r.text)))
        i += 1
    search = literal = None
    if len(words) == 1 and len(preds) == 1 and not words[0].startswith(("!", "-l")) \
            and not words[0].lower().startswith("state:"):
        search = _regex(words[0]).search
        if _LITERAL_WORD.fullmatch(words[0]):
            literal = words[0].lower()
    return RowFilter(text, tuple(preds), search, literal)


_LITERAL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./=-]*")
# ASCII characters a regex takes as themselves (no `.`), so the regex is a substring search.
_LITERAL_WORD = re.compile(r"[A-Za-z0-9_/=-]+")


def _plain_word(text: str) -> bool:
    return bool(_LITERAL.fullmatch(text))


def narrows(old: str, new: str) -> bool:
    """Every row `new` matches, `old` matched too: one plain word (no regex operator, label or
    state term) typed on at its end."""
    return new.startswith(old) and _plain_word(old) and _plain_word(new)


def widens(old: str, new: str) -> bool:
    """Every row `old` matched, `new` matches too (`narrows` the other way: backspace)."""
    return narrows(new, old)


def _sort_value(row: Row, name: str) -> tuple[int, object]:
    # Missing values sort last whatever their type; (0, value) keeps types within one column.
    v = row.sort.get(name)
    return (1, "") if v is None else (0, v)


def sort_rows(rows: list[Row], name: str | None, reverse: bool = False,
              tiebreak: str = "name") -> list[Row]:
    if not name:
        return rows
    out = sorted(rows, key=lambda r: _sort_value(r, tiebreak))
    present = [r for r in out if r.sort.get(name) is not None]
    missing = [r for r in out if r.sort.get(name) is None]
    present.sort(key=lambda r: r.sort[name], reverse=reverse)
    return present + missing


def sort_ids(rows: Mapping[str, Row], name: str | None, reverse: bool = False,
             tiebreak: str = "name") -> list[str]:
    """Row ids in `sort_rows` order (the table model sorts ids, not copies of rows).

    Keys are pulled out in one pass and sorted as tuples, so the comparisons run in C: a sort of
    20,000 rows is a key press, not a pause (equal rows: tiebreak, then id)."""
    if not name:
        return list(rows)  # as built
    present: list[tuple] = []
    missing: list[tuple] = []
    for rid, row in rows.items():
        s = row.sort
        t = s.get(tiebreak)
        # Tiebreaks are names: strings compare fastest, and the sentinel sorts a missing one last.
        tk = t if t.__class__ is str else _LAST if t is None else str(t)
        v = s.get(name)
        if v is None:
            missing.append((tk, rid))
        else:
            present.append((v, tk, rid))
    present.sort()
    if reverse:
        # Value descending, ties still by tiebreak ascending: reverse, then each run of equal values.
        present.reverse()
        i, n = 0, len(present)
        while i < n:
            v = present[i][0]
            j = i + 1
            while j < n and present[j][0] == v:
                j += 1
            if j - i > 1:
                present[i:j] = present[i:j][::-1]
            i = j
    missing.sort()
    return [p[2] for p in present] + [m[1] for m in missing]


_LAST = "\U0010ffff"
_STR_OR_NONE = frozenset({str, type(None)})


def sort_orders(rows: Mapping[str, Row], wanted: Iterable[tuple[str, bool]], tiebreak: str = "name",
                between: Callable[[], object] = lambda: None) -> dict[tuple[str, bool], list[str]]:
    """Several `sort_ids` orders at once (the orders computed ahead, off the UI thread).

    The rows are put in tiebreak order once; each order is then a stable sort of that by its
    value alone (Python's sort keeps ties in place, `reverse=True` included): no key tuples,
    and one value per row per sort name for both directions: about a third of `sort_ids` each.
    `between` is called before each order (a worker's chance to let other work go first)."""
    tk = {rid: _tiebreak_key(row, tiebreak) for rid, row in rows.items()}
    base = sorted(rows)
    base.sort(key=tk.__getitem__)
    out: dict[tuple[str, bool], list[str]] = {}
    values: dict[str, dict[str, Any]] = {}
    for name, reverse in wanted:
        between()
        if not name:
            out[(name, reverse)] = list(rows)
            continue
        vals = values.get(name)
        if vals is None:
            vals = values[name] = {rid: row.sort.get(name) for rid, row in rows.items()}
        out[(name, reverse)] = _by_value(base, vals, reverse)
    return out


def _by_value(base: list[str], vals: Mapping[str, Any], reverse: bool) -> list[str]:
    """`base` (ids in tiebreak order) stably sorted by `vals`, rows without a value last."""
    present = [rid for rid in base if vals[rid] is not None]
    present.sort(key=vals.__getitem__, reverse=reverse)
    if len(present) < len(base):
        present.extend(rid for rid in base if vals[rid] is None)
    return present

# Up to this many moved rows, an order is patched in place of being dropped: each costs a few
# bisections, against ~20 ms to sort 20,000 rows again.
PATCH_SMALL = 64


def _tiebreak_key(row: Row, tiebreak: str) -> str:
    t = row.sort.get(tiebreak)
    return t if t.__class__ is str else _LAST if t is None else str(t)  # as sort_ids


class _Desc:
    """A value that sorts the other way (reverse orders keep ties by tiebreak ascending)."""

    __slots__ = ("v",)

    def __init__(self, v: object) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return other.v < self.v  # type: ignore[operator]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v

    __hash__ = None  # type: ignore[assignment]


def order_key(row: Row, rid: str, name: str, reverse: bool, tiebreak: str = "name") -> tuple:
    """A key that increases along `sort_ids(…, name, reverse)`: (0, value, tiebreak, id) for rows
    with the value, (1, tiebreak, id) after them; unique per row, so bisection finds one place."""
    v = row.sort.get(name)
    tk = _tiebreak_key(row, tiebreak)
    if v is None:
        return (1, tk, rid)
    return (0, _Desc(v) if reverse else v, tk, rid)


Move = tuple[Row | None, Row | None]  # (row as the order was built with, row now); None: absent


def patch_order(order: list[str], rows: Mapping[str, Row], moves: Mapping[str, Move], name: str,
                reverse: bool = False, tiebreak: str = "name") -> list[str]:
    """`order` (a `sort_ids` order of the rows before `moves`) for the rows now, as a new list.

    `rows` holds every row now; ids not in `moves` are unchanged. Moved ids are taken out (found
    by bisection on their old key when few, by one pass when many), then each is put back where
    its new key goes: O(m log n) key computations plus list copies in C, instead of a re-sort."""
    def key_then(rid: str) -> tuple:
        mv = moves.get(rid)
        return order_key(mv[0] if mv is not None else rows[rid], rid, name, reverse, tiebreak)  # type: ignore[arg-type]

    def key_now(rid: str) -> tuple:
        mv = moves.get(rid)
        return order_key(mv[1] if mv is not None else rows[rid], rid, name, reverse, tiebreak)  # type: ignore[arg-type]

    if len(moves) <= PATCH_SMALL:
        keep = order.copy()
        for rid, (old, _) in moves.items():
            if old is None:
                continue
            i = bisect.bisect_left(keep, key_then(rid), key=key_then)
            if i < len(keep) and keep[i] == rid:
                del keep[i]
            else:  # not where its key says (should not happen): find it the slow way
                with suppress(ValueError):
                    keep.remove(rid)
    else:
        keep = [rid for rid in order if rid not in moves]
    added = sorted((rid for rid, (_, new) in moves.items() if new is not None), key=key_now)
    out: list[str] = []
    lo = 0
    for rid in added:
        i = bisect.bisect_left(keep, key_now(rid), lo, key=key_now)
        out.extend(keep[lo:i])
        out.append(rid)
        lo = i
    out.extend(keep[lo:])
    return out


def _moved_names(old: Row | None, new: Row | None, tiebreak: str) -> set[str] | None:
    """Sort names whose order a move changes; None: every order (came, went, or tiebreak moved)."""
    if old is None or new is None:
        return None
    if old.sort is new.sort:
        return set()
    if old.sort.get(tiebreak) != new.sort.get(tiebreak):
        return None
    return {k for k in old.sort.keys() | new.sort.keys() if old.sort.get(k) != new.sort.get(k)}


class SortCache:
    """`sort_ids` for a table re-sorted often: each (name, reverse) order is kept and follows row
    changes (`moved`), so flipping between sorts costs nothing and a few changed rows cost a few
    bisections. Orders can be computed ahead, off the UI thread, from a snapshot of the rows
    (`generation` before, `install` after: only orders no row moved for since are taken)."""

    def __init__(self, tiebreak: str = "name") -> None:
        self.tiebreak = tiebreak
        self._orders: dict[tuple[str | None, bool], list[str]] = {}
        self.generation = 0  # counts changes to the rows that moved some order
        self._touched: dict[str, int] = {}  # sort name → generation of its last move
        self._touched_all = 0  # generation of the last change that moved every order

    def invalidate(self, names: Iterable[str] | None = None) -> None:
        """Rows came or went (`names` None), or changed these sort values: forget those orders."""
        self.generation += 1
        if names is None:
            self._orders.clear()
            self._touched_all = self.generation
            return
        for name in names:
            if name == self.tiebreak:
                self._orders.clear()
                self._touched_all = self.generation
                return
            self._touched[name] = self.generation
            self._orders.pop((name, False), None)
            self._orders.pop((name, True), None)

    def moved(self, rows: Mapping[str, Row], moves: Mapping[str, Move],
              keep: tuple[str | None, bool] | None = None, *, more: bool = False) -> None:
        """Rows changed (`rows` is already the new state): patch the orders they move when the
        moves are few, or the `keep` order (the one on screen) unless they are a good share of
        the rows; forget the others (they are sorted again when asked for, or ahead).

        `more`: these moves are the first part of a burst whose rest follows (the rows on screen
        first): only `keep` is patched, since the rest would drop the others anyway."""
        every: dict[str, Move] = {}
        by_name: dict[str, dict[str, Move]] = {}
        for rid, mv in moves.items():
            names = _moved_names(mv[0], mv[1], self.tiebreak)
            if names is None:
                every[rid] = mv
            else:
                for n in names:
                    by_name.setdefault(n, {})[rid] = mv
        if not every and not by_name:
            return
        self.generation += 1
        if every:
            self._touched_all = self.generation
        for n in by_name:
            self._touched[n] = self.generation
        for (name, reverse), order in list(self._orders.items()):
            if name is None:
                continue
            mine = {**every, **by_name.get(name, {})}
            if not mine:
                continue
            small = len(mine) <= PATCH_SMALL and not more
            if small or ((name, reverse) == keep and len(mine) * 8 < len(order)):
                try:
                    self._orders[(name, reverse)] = patch_order(order, rows, mine, name, reverse, self.tiebreak)
                    continue
                except (KeyError, TypeError):  # an order out of step with the rows: sort again
                    pass
            del self._orders[(name, reverse)]

    def cached(self, name: str | None, reverse: bool = False) -> list[str] | None:
        return self._orders.get((name, reverse))

    def missing(self, names: Iterable[str]) -> list[tuple[str, bool]]:
        """Which of these orders (both directions) are not kept."""
        return [(n, r) for n in names for r in (False, True) if (n, r) not in self._orders]

    def install(self, orders: Mapping[tuple[str, bool], list[str]], generation: int) -> int:
        """Orders computed from the rows as they were at `generation`: keep those no row moved
        for since (and that are still missing); returns how many were kept."""
        if self._touched_all > generation:
            return 0
        kept = 0
        for (name, reverse), order in orders.items():
            if self._touched.get(name, 0) > generation or (name, reverse) in self._orders:
                continue
            self._orders[(name, reverse)] = order
            kept += 1
        return kept

    def sorted_ids(self, rows: Mapping[str, Row], name: str | None, reverse: bool = False) -> list[str]:
        if not name:
            return list(rows)
        cached = self._orders.get((name, reverse))
        if cached is None:
            cached = self._from_tiebreak(rows, name, reverse)
            if cached is None:
                cached = sort_ids(rows, name, reverse, self.tiebreak)
            self._orders[(name, reverse)] = cached
        return cached

    def _from_tiebreak(self, rows: Mapping[str, Row], name: str, reverse: bool) -> list[str] | None:
        """The order from the kept tiebreak order, by a stable sort on the value alone (a sort key
        pressed before its order was computed ahead: a third of `sort_ids`). The tiebreak order
        is the (tiebreak, id) order `sort_ids` breaks ties by only when every tiebreak value is
        a string (or missing); None otherwise, or when it is not kept."""
        base = self._orders.get((self.tiebreak, False))
        if base is None or name == self.tiebreak or len(base) != len(rows):
            return None
        tiebreak = self.tiebreak
        if not {row.sort.get(tiebreak).__class__ for row in rows.values()} <= _STR_OR_NONE:
            return None
        return _by_value(base, {rid: row.sort.get(name) for rid, row in rows.items()}, reverse)

