"""`/` filters and capital-letter sorts over rows, k9s style.

Filter syntax (terms are ANDed):
  regex        rows whose visible text matches (case-insensitive; a bad regex matches literally)
  !regex       rows whose text does not match
  -l k=v,k2    label selector: equality, `!=`, bare key (exists), `!key` (absent)
  state:WORD   rows in that state (pending, admitted, inactive, quotareserved, finished, …)
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kueuetop.tui.rows import Row

Predicate = Callable[[Row], bool]


@dataclass(frozen=True)
class RowFilter:
    text: str
    predicates: tuple[Predicate, ...]
    search: Callable[[str], object] | None = None  # the filter is this one regex over `Row.text`

    def __call__(self, row: Row) -> bool:
        return all(p(row) for p in self.predicates)

    def passes(self, rows: Mapping[str, Row], ids: Iterable[str]) -> dict[str, bool]:
        """Which of `ids` pass (one call for many rows: the common one-regex case runs without
        a Python call per predicate)."""
        if self.search is not None:
            search = self.search
            return {rid: search(rows[rid].text) is not None for rid in ids}
        return {rid: self(rows[rid]) for rid in ids}

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
    search = None
    if len(words) == 1 and len(preds) == 1 and not words[0].startswith(("!", "-l")) \
            and not words[0].lower().startswith("state:"):
        search = _regex(words[0]).search
    return RowFilter(text, tuple(preds), search)


_LITERAL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./=-]*")


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


class SortCache:
    """`sort_ids` for a table re-sorted often: each (name, reverse) order is kept until a row
    changes that sort value (`invalidate`), so flipping between sorts costs nothing."""

    def __init__(self, tiebreak: str = "name") -> None:
        self.tiebreak = tiebreak
        self._orders: dict[tuple[str | None, bool], list[str]] = {}

    def invalidate(self, names: Iterable[str] | None = None) -> None:
        """Rows came or went (`names` None), or changed these sort values."""
        if names is None:
            self._orders.clear()
            return
        for name in names:
            if name == self.tiebreak:
                self._orders.clear()
                return
            self._orders.pop((name, False), None)
            self._orders.pop((name, True), None)

    def sorted_ids(self, rows: Mapping[str, Row], name: str | None, reverse: bool = False) -> list[str]:
        if not name:
            return list(rows)
        cached = self._orders.get((name, reverse))
        if cached is None:
            cached = self._orders[(name, reverse)] = sort_ids(rows, name, reverse, self.tiebreak)
        return cached


def labels_of(obj: object) -> Mapping[str, str]:
    meta = getattr(obj, "meta", None)
    return getattr(meta, "labels", None) or {}
