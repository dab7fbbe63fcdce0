from rich.text import Text

from kueuetop.tui.filtering import parse_filter, sort_rows
from kueuetop.tui.rows import Row, age, cell


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
