"""Bad flags, files and server answers: one line on stderr, a nonzero exit, never a traceback.
Each runs the real command as a subprocess."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kueuetop.sim.apiserver.kubeconfig import write_kubeconfig
from tests.sim.test_serve_process import free_port


def kueuetop(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "KUEUETOP_STATE_DIR": str(home / "state"),
           "XDG_RUNTIME_DIR": str(home)}
    return subprocess.run([sys.executable, "-m", "kueuetop", *args], capture_output=True, text=True,
                          timeout=180, env=env, stdin=subprocess.DEVNULL)


def assert_one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("kueuetop: "), r.stderr
    return r.stderr


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "eighty"])
def test_sim_serve_bad_port(port: str, tmp_path: Path) -> None:
    err = assert_one_line_error(kueuetop("sim", "serve", "refarch", f"--port={port}", home=tmp_path))
    assert "port" in err


def test_sim_serve_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        err = assert_one_line_error(kueuetop("sim", "serve", "refarch", "--port", str(s.getsockname()[1]),
                                             home=tmp_path))
    assert "cannot start" in err


@pytest.mark.parametrize("content", ["abc: [unclosed\n", "{not json", "- just\n- a list\n",
                                     "tok: {user: a, role: root}\n"])
def test_sim_serve_bad_token_file(content: str, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(content)
    err = assert_one_line_error(kueuetop("sim", "serve", "refarch", "--token-file", str(tokens), home=tmp_path))
    assert "token" in err


def test_sim_serve_missing_token_file(tmp_path: Path) -> None:
    assert_one_line_error(kueuetop("sim", "serve", "refarch", "--token-file", str(tmp_path / "nope"),
                                   home=tmp_path))


@pytest.fixture
def html_server() -> Iterator[str]:
    """A web server answering every request with an HTML page, as a login proxy would."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = b"<!DOCTYPE html><html><body><h1>Please sign in</h1></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_PUT = _answer

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("cmd", [["hold", "team-a/w", "--yes"], ["preempt", "team-a/w", "--yes", "--no-preview"],
                                 ["stop", "cq/x", "--yes", "--no-access-check"], ["snapshot"]])
def test_command_against_an_html_server(cmd: list[str], html_server: str, tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kc", html_server)
    err = assert_one_line_error(kueuetop(*cmd, "--kubeconfig", str(kc), home=tmp_path))
    assert "not a Kubernetes API server" in err


@pytest.fixture
def not_found_server() -> Iterator[str]:
    """A web server answering every request with a bare 404, as a catch-all proxy may."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PATCH = do_PUT = _answer

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("cmd", [["hold", "team-a/w", "--yes"], ["stop", "cq/x", "--yes"], ["snapshot"]])
def test_command_against_a_server_answering_404_everywhere(cmd: list[str], not_found_server: str,
                                                           tmp_path: Path) -> None:
    """Not "workload not found": the server is no API server at all, said before anything is sent."""
    kc = write_kubeconfig(tmp_path / "kc", not_found_server)
    err = assert_one_line_error(kueuetop(*cmd, "--kubeconfig", str(kc), home=tmp_path))
    assert "does not look like a Kubernetes API server (no /version)" in err


@pytest.mark.parametrize("target", ["cq/.", "team-c/..", "lq/team-c/.", "team-a/w\x1b[31m", "Team-A/w",
                                    "team-a/w?x=1", "cq/-x"])
def test_a_target_that_is_no_object_name_is_bad_usage(target: str, tmp_path: Path) -> None:
    r = kueuetop("stop" if target.startswith(("cq/", "lq/")) else "hold", target, "--yes", home=tmp_path)
    err = assert_one_line_error(r)
    assert r.returncode == 2 and "bad target" in err and "\x1b" not in err


def _failing_plugin(tmp_path: Path, lines: int = 12) -> Path:
    plugin = tmp_path / "auth-plugin"
    noise = "".join(f"echo 'plugin diagnostic line {i}' >&2\n" for i in range(lines))
    plugin.write_text("#!/bin/sh\n" + noise +
                      "echo 'error: refresh token expired for https://bob:hunter2@login.example.com' >&2\n"
                      "exit 3\n")
    plugin.chmod(0o755)
    kc = tmp_path / "kc"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{free_port()}"}}}}]
users: [{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: {plugin},
  interactiveMode: Never}}}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
""")
    return kc


@pytest.mark.parametrize("cmd", [["hold", "team-a/w", "--yes"], ["snapshot"], ["explain", "team-a/w"]])
def test_failing_exec_plugin_is_summarised_in_one_line(cmd: list[str], tmp_path: Path) -> None:
    kc = _failing_plugin(tmp_path)
    r = kueuetop(*cmd, "--kubeconfig", str(kc), home=tmp_path)
    err = assert_one_line_error(r)
    assert r.returncode == 1  # the same for every command: the kubeconfig is fine, its login is not
    assert "exec credential plugin failed (exit 3): error: refresh token expired" in err
    assert "hunter2" not in err and "diagnostic line" not in err


def test_failing_exec_plugin_on_a_terminal_is_summarised_too(tmp_path: Path) -> None:
    """With stdout on a terminal the kubernetes client lets the plugin write to the terminal's
    stderr (and then logs an AttributeError): all of it becomes the one line."""
    script = pytest.importorskip("shutil").which("script")
    if script is None:
        pytest.skip("script(1) not installed")
    kc = _failing_plugin(tmp_path)
    env = {**os.environ, "HOME": str(tmp_path), "KUEUETOP_STATE_DIR": str(tmp_path / "state")}
    cmd = f"{sys.executable} -m kueuetop snapshot --kubeconfig {kc}; echo rc=$?"
    r = subprocess.run([script, "-qec", cmd, "/dev/null"], capture_output=True, text=True, timeout=180, env=env,
                       stdin=subprocess.DEVNULL)
    lines = [ln for ln in r.stdout.replace("\r", "").splitlines() if ln.strip()]
    assert lines[-1] != "rc=0", r.stdout
    assert len(lines) == 2 and "exec credential plugin failed" in lines[0], r.stdout
    assert "hunter2" not in r.stdout and "Traceback" not in r.stdout


def test_refused_scenario_step_exits_nonzero(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: Not_Valid}\n"
                        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: ok}\n")
    r = kueuetop("sim", "run", str(scenario), "--for", "1m", "--report", "json", "-o", str(tmp_path / "r.json"),
                 home=tmp_path)
    err = assert_one_line_error(r)
    assert "s.yaml#doc1" in err and "Not_Valid" in err
    assert "Not_Valid" in (tmp_path / "r.json").read_text()  # the report is still written


def test_sim_without_subcommand_prints_usage_and_exits_2(tmp_path: Path) -> None:
    r = kueuetop("sim", home=tmp_path)
    assert r.returncode == 2 and "usage: kueuetop sim" in r.stderr and "serve" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_sim_subcommand_is_one_line(tmp_path: Path) -> None:
    r = kueuetop("sim", "bogus", home=tmp_path)
    assert r.returncode == 2
    assert_one_line_error(r)
