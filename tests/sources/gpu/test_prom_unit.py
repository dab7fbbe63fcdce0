"""PrometheusSource without a server: GMP settings, query shape, errors as status."""

from __future__ import annotations

from kueuetop.sources.prom import _Q, PromConfig, PrometheusSource, _describe_http, gmp_url

from .conftest import free_port


def test_gmp_url_selector_and_token() -> None:
    url = gmp_url("my-proj")
    assert url == "https://monitoring.googleapis.com/v1/projects/my-proj/location/global/prometheus"
    src = PrometheusSource(PromConfig(url=url, token="t1", headers={"X-Tenant": "a"}, selector='cluster="c1"'))
    assert src._prom.headers == {"X-Tenant": "a", "Authorization": "Bearer t1"}
    src.set_token("t2")
    assert src._prom.headers["Authorization"] == "Bearer t2"
    q = _Q('cluster="c1"').gpus()
    assert "__name__" not in q and 'DCGM_FI_DEV_GPU_UTIL{cluster="c1"}' in q  # GMP: exact names only


def test_unreachable_without_data_reports_status() -> None:
    src = PrometheusSource(PromConfig(url=f"http://127.0.0.1:{free_port()}", timeout=2))
    r = src.gpus()
    assert r.stale and r.samples == [] and "connection refused" in src.status.message
    assert "no data yet" in src.status.message and src.status.age() is None
    assert src.nodes().stale and src.util_distribution(60).stale and src.fleet().gpus is not None


def test_http_error_messages() -> None:
    msg = "HTTP Status Code 400 (b'{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"1:5: parse error\"}')"
    assert _describe_http(msg) == "HTTP 400 bad_data: 1:5: parse error"
    assert _describe_http("HTTP Status Code 401 (b'')").startswith("HTTP 401 unauthorized")
