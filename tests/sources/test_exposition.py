"""The exposition parser: strict about samples, forgiving about everything else."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kueuetop.sources.exposition import ParseStats, Sample, family_of, parse_exposition, parse_value


def parse(text: str, **kw) -> tuple[list[Sample], ParseStats]:
    stats = ParseStats()
    return list(parse_exposition(text, stats, **kw)), stats


def test_samples_help_and_type():
    text = (
        "# HELP http_requests_total The total number of HTTP requests.\n"
        "# TYPE http_requests_total counter\n"
        'http_requests_total{method="post",code="200"} 1027 1395066363000\n'
        'http_requests_total{method="post",code="400"}    3 1395066363000\n'
        "\n"
        "metric_without_labels 12.47\n"
    )
    samples, stats = parse(text)
    assert samples == [
        Sample("http_requests_total", {"method": "post", "code": "200"}, 1027.0, 1395066363000),
        Sample("http_requests_total", {"method": "post", "code": "400"}, 3.0, 1395066363000),
        Sample("metric_without_labels", {}, 12.47, None),
    ]
    assert stats.types == {"http_requests_total": "counter"}
    assert stats.helps == {"http_requests_total": "The total number of HTTP requests."}
    assert stats.samples == 3 and stats.skipped == 0


def test_label_order_is_kept():
    samples, _ = parse('m{z="1",a="2",UUID="3"} 1\n')
    assert list(samples[0].labels) == ["z", "a", "UUID"]


def test_escaped_label_values():
    samples, stats = parse(r'msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9' + "\n")
    assert stats.skipped == 0
    assert samples[0].labels == {"path": "C:\\DIR\\FILE.TXT", "error": 'Cannot find file:\n"FILE.TXT"'}
    assert samples[0].value == 1.458255915e9


def test_unknown_escape_is_kept_verbatim():
    samples, _ = parse(r'm{a="tab\there"} 1' + "\n")
    assert samples[0].labels["a"] == "tab\\there"


def test_help_unescapes_backslash_and_newline_only():
    _, stats = parse("# HELP m line one\\nline two \\\\ and \\t\nm 1\n")
    assert stats.helps["m"] == "line one\nline two \\ and \\t"


def test_special_values():
    text = "a NaN\nb +Inf\nc -Inf\nd Inf\ne nan\nf 1e-3\ng -0.5\nh 0x1p-2\n"
    samples, stats = parse(text)
    values = {s.name: s.value for s in samples}
    assert stats.skipped == 0
    assert math.isnan(values["a"]) and math.isnan(values["e"])
    assert values["b"] == math.inf and values["d"] == math.inf and values["c"] == -math.inf
    assert values["f"] == 0.001 and values["g"] == -0.5 and values["h"] == 0.25


def test_huge_values():
    samples, stats = parse("sentinel 9223372036854775794\nbig 1.7976931348623157e308\ntoo_big 1e400\nneg -1e400\n")
    values = {s.name: s.value for s in samples}
    assert stats.skipped == 0
    assert values["sentinel"] == 9.223372036854775794e18
    assert values["big"] == 1.7976931348623157e308
    # Beyond float64: kept as ±Inf rather than dropping the sample.
    assert values["too_big"] == math.inf and values["neg"] == -math.inf


def test_python_only_float_spellings_are_rejected():
    for bad in ("1_000", "infinityy", "0x", "1e", "--1", "1.2.3", "١٢"):
        assert parse_value(bad) is None, bad
    samples, stats = parse("a 1_000\nb 1e\n")
    assert samples == [] and stats.skipped == 2


def test_comments_and_blank_lines():
    text = "# just a comment\n#\n   \n\t\n# HELP\n# TYPE\nm 1\n"
    samples, stats = parse(text)
    assert [s.name for s in samples] == ["m"]
    assert stats.skipped == 0


def test_garbage_lines_are_counted_not_raised():
    text = (
        "good 1\n"
        "no_value\n"
        'broken{a="1" 2\n'
        'unterminated{a="1} 3\n'
        "{} 4\n"
        "123 5\n"
        "bad value\n"
        "m 1 notatimestamp\n"
        "m 1 2 3\n"
        'dup{a="1",a="2"} 1\n'
        'm{1bad="x"} 1\n'
        "also_good 2\n"
    )
    samples, stats = parse(text)
    assert [s.name for s in samples] == ["good", "also_good"]
    assert stats.skipped == 10
    assert stats.errors[0][0] == 2  # line numbers point at the culprit
    assert len(stats.errors) == 10


def test_error_list_is_capped_but_count_is_not():
    samples, stats = parse("x\n" * 100)
    assert samples == [] and stats.skipped == 100 and len(stats.errors) == stats.max_errors


def test_control_characters_in_label_values_are_preserved():
    text = 'm{pod="evil\x1b[31mred\x07",tab="a\tb",cr="x\ry"} 1\n'
    samples, stats = parse(text)
    assert stats.skipped == 0
    assert samples[0].labels == {"pod": "evil\x1b[31mred\x07", "tab": "a\tb", "cr": "x\ry"}


def test_label_values_with_braces_commas_and_spaces():
    samples, _ = parse('m{a="x} 3, y",b="{}"} 4\n')
    assert samples[0].labels == {"a": "x} 3, y", "b": "{}"}
    assert samples[0].value == 4


def test_whitespace_inside_braces_and_trailing_comma():
    # The dcgm-exporter README prints `{gpu="0", UUID="…"}`.
    samples, stats = parse('DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-1" , } 139\n')
    assert stats.skipped == 0
    assert samples[0].labels == {"gpu": "0", "UUID": "GPU-1"}


def test_crlf_line_endings():
    samples, stats = parse("# TYPE m gauge\r\nm 1\r\nn{a=\"b\"} 2\r\n")
    assert [(s.name, s.value) for s in samples] == [("m", 1.0), ("n", 2.0)]
    assert stats.types == {"m": "gauge"} and stats.skipped == 0


def test_histogram_and_summary_families():
    text = (
        "# TYPE rpc histogram\n"
        'rpc_bucket{le="0.5"} 1\n'
        'rpc_bucket{le="+Inf"} 3\n'
        "rpc_sum 4.5\n"
        "rpc_count 3\n"
        "# TYPE lat summary\n"
        'lat{quantile="0.99"} 0.2\n'
        "lat_sum 9\n"
        "lat_count 30\n"
        "plain_count 1\n"
    )
    samples, stats = parse(text)
    fams = [family_of(s.name, stats.types) for s in samples]
    assert fams == ["rpc"] * 4 + ["lat"] * 3 + ["plain_count"]
    assert samples[1].labels["le"] == "+Inf" and float(samples[1].labels["le"]) == math.inf


def test_openmetrics_basics():
    text = (
        "# TYPE foo counter\n"
        "# UNIT foo seconds\n"
        'foo_total{a="b"} 17.0 1520879607.789 # {trace_id="KOO5S4vxi0o"} 0.67\n'
        "foo_created 1520872607.123\n"
        "# EOF\n"
        "after_eof 1\n"
    )
    samples, stats = parse(text, openmetrics=True)
    assert [s.name for s in samples] == ["foo_total", "foo_created"]
    assert samples[0].timestamp_ms == 1520879607789
    assert samples[0].labels == {"a": "b"}
    assert family_of("foo_total", stats.types) == "foo"
    assert stats.units == {"foo": "seconds"}


def test_utf8_quoted_metric_name():
    samples, stats = parse('{"my.metric", "label.with.dots"="v", plain="p"} 2\n')
    assert stats.skipped == 0
    assert samples == [Sample("my.metric", {"label.with.dots": "v", "plain": "p"}, 2.0, None)]


def test_negative_timestamp_and_missing_newline_at_end():
    samples, _ = parse("m 1 -5")
    assert samples == [Sample("m", {}, 1.0, -5)]


def test_labels_are_independent_dicts():
    # Identical label blocks are parsed once; each sample must still own its dict.
    samples, _ = parse('a{x="1"} 1\nb{x="1"} 2\n')
    samples[0].labels["x"] = "changed"
    assert samples[1].labels == {"x": "1"}


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


label_values = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
finite = st.floats(allow_nan=False, allow_infinity=True)


@given(st.dictionaries(st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,10}", fullmatch=True), label_values, max_size=5),
       finite, st.one_of(st.none(), st.integers(-(2**62), 2**62)))
@settings(max_examples=300)
def test_roundtrip_any_label_values(labels, value, ts):
    block = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    text = f"metric_name{{{block}}} {value!r}" + (f" {ts}" if ts is not None else "") + "\n"
    text = text.replace("inf}", "Inf}").replace(" inf", " +Inf").replace(" -inf", " -Inf")
    samples, stats = parse(text)
    assert stats.skipped == 0, (text, stats.errors)
    assert samples == [Sample("metric_name", labels, value, ts)]


@given(st.text(max_size=300))
@settings(max_examples=300)
def test_never_raises_on_arbitrary_text(text):
    stats = ParseStats()
    samples = list(parse_exposition(text, stats))
    assert stats.samples == len(samples)
    for s in samples:
        assert isinstance(s.value, float)
