"""A kubeconfig server URL with credentials works, and they never reach the output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kueuetop.sim.apiserver import ApiServer, write_kubeconfig


def test_snapshot_output_never_shows_url_credentials(server: ApiServer, tmp_path: Path) -> None:
    url = server.url.replace("http://", "http://alice:pw-secret-77@")
    kc = write_kubeconfig(tmp_path / "kc", url)
    r = subprocess.run([sys.executable, "-m", "kueuetop", "snapshot", "--kubeconfig", str(kc), "-o", "json",
                        "--timeout", "20s"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert '"server": "http://***@127.0.0.1:' in r.stdout
    assert "pw-secret-77" not in r.stdout + r.stderr
