"""A list or watch from a resourceVersion the server has not reached answers 504, as kube-apiserver's
watch cache does, so clients of a restarted server relist instead of trusting what they hold."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from kueuetop.sim.apiserver import ApiServer


@pytest.mark.parametrize("query", ["resourceVersion={rv}", "watch=1&resourceVersion={rv}"])
def test_a_future_resource_version_is_504_too_large(server: ApiServer, query: str) -> None:
    current = server.store.resource_version
    url = f"{server.url}/api/v1/namespaces?" + query.format(rv=current + 1000)
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url, timeout=5)
    assert err.value.code == 504
    assert err.value.headers.get("Retry-After") == "1"
    body = json.loads(err.value.read())
    assert body["reason"] == "Timeout"
    assert body["message"] == f"Too large resource version: {current + 1000}, current: {current}"
    assert body["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}]


@pytest.mark.parametrize("query", ["resourceVersion={rv}", "watch=1&resourceVersion={rv}&timeoutSeconds=1"])
def test_the_current_resource_version_is_served(server: ApiServer, query: str) -> None:
    url = f"{server.url}/api/v1/namespaces?" + query.format(rv=server.store.resource_version)
    with urllib.request.urlopen(url, timeout=5) as resp:
        assert resp.status == 200
