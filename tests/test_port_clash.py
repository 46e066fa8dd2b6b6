"""A port already in use (issue 51, point 3): the app says so in one line naming TRADLAB_PORT and
--port, before the demo's set-up and without gradio's traceback (which names a variable this app
ignores), and writes nothing; `links` says where its links' address comes from."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from harness.app import ROOT, run_cli


def test_a_taken_port_gets_one_line_naming_the_settings(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        env = {**os.environ, "TRADLAB_DB": str(tmp_path / "app.db"), "TRADLAB_MEDIA": str(tmp_path / "media")}
        res = subprocess.run(
            [sys.executable, "app.py", "--demo", "--port", str(port)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert res.returncode == 2
    assert f"Port {port} on 127.0.0.1 is already in use" in res.stderr
    assert f"TRADLAB_PORT={port + 1}" in res.stderr and f"--port {port + 1}" in res.stderr
    assert "Traceback" not in res.stderr and "GRADIO_SERVER_PORT" not in res.stderr
    assert not (tmp_path / "app.db").exists()  # stopped before the demo's set-up


def test_links_say_where_their_address_comes_from(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("TRADLAB_PUBLIC_URL", "SPACE_ID")}
    env.update({"TRADLAB_DB": str(tmp_path / "a.db"), "TRADLAB_MEDIA": str(tmp_path / "m"), "TRADLAB_PORT": "7999"})
    assert run_cli("import", ROOT / "assets" / "demo_study", env=env).returncode == 0
    res = run_cli("links", "--study", "demo", env=env)
    assert res.returncode == 0 and res.stdout.startswith("id\trole")  # the table itself stays parseable
    assert "# links on http://127.0.0.1:7999: the address a server started with these settings" in res.stderr
    res = run_cli("links", "--study", "demo", env={**env, "TRADLAB_PUBLIC_URL": "https://study.example.org"})
    assert "# links on https://study.example.org: TRADLAB_PUBLIC_URL" in res.stderr
