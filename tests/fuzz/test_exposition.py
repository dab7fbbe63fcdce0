"""Prometheus / DCGM exposition text (kueuetop.sources.exposition): real scrapes of the simulated
kueue-controller-manager and dcgm-exporters, mutated. The parser never raises (bad lines are
skipped and counted) and what it yields is well formed."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from kueuetop.sources.exposition import ParseStats, Sample, parse_exposition

from .seeds import exposition_texts
from .strategies import FUZZ, mutate_text, pick

SEEDS = list(exposition_texts())


@st.composite
def scrapes(draw: st.DrawFn) -> str:
    text = mutate_text(draw, SEEDS[pick(draw, len(SEEDS))], max_mutations=6)
    return text.replace("\n", "\r\n") if draw(st.booleans()) and "\r" not in text else text


@FUZZ
@given(scrapes(), st.booleans())
# Found by this fuzz: a timestamp too long for int() (ValueError), and seconds that overflow to
# an infinite number of milliseconds (OverflowError).
@example('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 ' + "9" * 5000, False)
@example('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 1e308', True)
@example('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 99999999999999999999', False)
def test_scrapes_parse_without_raising(text: str, openmetrics: bool) -> None:
    stats = ParseStats()
    samples = list(parse_exposition(text, stats, openmetrics=openmetrics))
    assert stats.samples == len(samples) and stats.samples + stats.skipped <= stats.lines
    for s in samples:
        assert isinstance(s, Sample) and isinstance(s.name, str) and s.name
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in s.labels.items())
        assert isinstance(s.value, float)
        assert s.timestamp_ms is None or isinstance(s.timestamp_ms, int)
    assert all(isinstance(line, int) and isinstance(reason, str) and reason for line, reason in stats.errors)
