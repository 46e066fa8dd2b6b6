"""Deployment: a Space's defaults (/data), the ZeroGPU decorator, the self-signed certificate,
and the Space/Docker files checked statically (no Docker engine or Space is needed)."""

from __future__ import annotations

import datetime as dt
import os
import re
import ssl
import stat
import sys
import types
from pathlib import Path

import pytest

from services.common import settings as settings_mod
from services.common import tls
from services.common.settings import Settings
from services.models import zerogpu

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

ROOT = Path(__file__).resolve().parent.parent


# -- a Space's persistent storage -----------------------------------------------------------
@pytest.fixture
def fake_data(tmp_path, monkeypatch):
    """A tmp folder standing in for a Space's /data mount."""
    root = tmp_path / "data-mount"
    root.mkdir()
    monkeypatch.setattr(settings_mod, "SPACE_DATA_ROOT", root)
    return root


def test_space_with_storage_defaults_to_data(fake_data, monkeypatch):
    env = {"SPACE_ID": "lab/study", "SPACE_HOST": "lab-study.hf.space"}
    for name in ("TRADLAB_DB", "TRADLAB_MEDIA", "TRADLAB_HOST", "TRADLAB_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    s = Settings.from_env()
    assert s.db_path == fake_data / "tradlab.db"
    assert s.media_dir == fake_data / "media"
    assert s.host == "0.0.0.0"
    assert s.public_url == "https://lab-study.hf.space"
    assert settings_mod.space_storage_warning() is None


def test_explicit_settings_win_on_a_space(fake_data, tmp_path):
    env = {
        "SPACE_ID": "lab/study",
        "SPACE_HOST": "lab-study.hf.space",
        "TRADLAB_DB": str(tmp_path / "mine.db"),
        "TRADLAB_MEDIA": str(tmp_path / "m"),
        "TRADLAB_HOST": "127.0.0.1",
        "TRADLAB_PUBLIC_URL": "https://study.example.org/",
    }
    s = Settings.from_env(env)
    assert s.db_path == tmp_path / "mine.db" and s.media_dir == tmp_path / "m"
    assert s.host == "127.0.0.1" and s.public_url == "https://study.example.org"


def test_space_without_storage_stays_ephemeral_and_warns(tmp_path):
    missing = tmp_path / "no-such-mount"
    env = {"SPACE_ID": "lab/study"}
    s = Settings.from_env(env, data_root=missing)
    assert s.db_path == Path("data/tradlab.db") and s.media_dir == Path("data/media")
    assert s.host == "0.0.0.0"
    warning = settings_mod.space_storage_warning(env, data_root=missing)
    assert warning and "ephemeral" in warning and "persistent storage" in warning


def test_not_a_space_keeps_the_laptop_defaults(fake_data):
    s = Settings.from_env({})  # /data stand-in exists, but no SPACE_ID
    assert s.db_path == Path("data/tradlab.db") and s.media_dir == Path("data/media")
    assert s.host == "127.0.0.1" and s.public_url == "http://127.0.0.1:7860"
    assert settings_mod.space_storage_warning({}) is None


# -- ZeroGPU ------------------------------------------------------------------------------------
def _fn(x):
    return x * 2


def test_gpu_is_the_identity_without_spaces(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # `import spaces` raises ImportError
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert zerogpu.gpu(_fn) is _fn
    assert zerogpu.gpu(duration=120)(_fn) is _fn


@pytest.fixture
def fake_spaces(monkeypatch):
    calls = []
    mod = types.ModuleType("spaces")

    def GPU(fn=None, duration=None):
        def wrap(f):
            calls.append((f, duration))

            def wrapped(*a, **k):
                return ("on-gpu", f(*a, **k))

            return wrapped

        return wrap if fn is None else wrap(fn)

    mod.GPU = GPU
    monkeypatch.setitem(sys.modules, "spaces", mod)
    return calls


def test_gpu_wraps_with_spaces_on_zerogpu(fake_spaces, monkeypatch):
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    wrapped = zerogpu.gpu(_fn)
    assert wrapped is not _fn and wrapped(3) == ("on-gpu", 6)
    assert fake_spaces == [(_fn, None)]

    @zerogpu.gpu(duration=180)
    def long_job():
        return "done"

    assert long_job() == ("on-gpu", "done") and fake_spaces[-1][1] == 180


@pytest.mark.parametrize("value", [None, "", "0", "false"])
def test_gpu_needs_the_zerogpu_variable(fake_spaces, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    else:
        monkeypatch.setenv("SPACES_ZERO_GPU", value)
    assert zerogpu.gpu(_fn) is _fn and fake_spaces == []


# -- self-signed TLS ---------------------------------------------------------------------------
def _load(cert_path):
    from cryptography import x509

    return x509.load_pem_x509_certificate(Path(cert_path).read_bytes())


def test_self_signed_certificate_covers_the_hosts(tmp_path):
    hosts = ["gpu1.lab.example.org", "localhost", "127.0.0.1", "10.0.0.5"]
    cert, key = tls.make_self_signed(tmp_path / "tls", hosts)
    assert cert.is_file() and key.is_file()
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    c = _load(cert)
    assert tls.cert_hosts(c) == {"gpu1.lab.example.org", "localhost", "127.0.0.1", "10.0.0.5"}
    days = (c.not_valid_after_utc - c.not_valid_before_utc).days
    assert 365 <= days <= 366
    # the pair is usable by a TLS server (what uvicorn does with it)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    assert re.fullmatch(r"([0-9A-F]{2}:){31}[0-9A-F]{2}", tls.fingerprint(cert))


def test_self_signed_certificate_is_reused_then_regenerated_when_hosts_change(tmp_path):
    folder = tmp_path / "tls"
    cert, key = tls.make_self_signed(folder, ["a.example.org", "127.0.0.1"])
    first = cert.read_bytes(), key.read_bytes()
    # same hosts, or a subset: reused as it is
    assert tls.make_self_signed(folder, ["a.example.org", "127.0.0.1"]) == (cert, key)
    tls.make_self_signed(folder, ["127.0.0.1"])
    assert (cert.read_bytes(), key.read_bytes()) == first
    # a host the certificate does not cover: a new one
    tls.make_self_signed(folder, ["a.example.org", "127.0.0.1", "b.example.org"])
    assert cert.read_bytes() != first[0] and key.read_bytes() != first[1]
    assert "b.example.org" in tls.cert_hosts(_load(cert))
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600


def test_self_signed_certificate_is_regenerated_when_expiring_or_broken(tmp_path):
    folder = tmp_path / "tls"
    cert, key = tls.make_self_signed(folder, ["localhost"], days=1)
    short = cert.read_bytes()
    # less than the one-day margin left: replaced by a full-length one
    tls.make_self_signed(folder, ["localhost"])
    assert cert.read_bytes() != short
    assert (_load(cert).not_valid_after_utc - dt.datetime.now(dt.timezone.utc)).days >= 364
    key.write_text("not a key")
    tls.make_self_signed(folder, ["localhost"])
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(str(cert), str(key))


def test_tls_hosts_parsing_and_defaults():
    assert tls.parse_hosts("gpu1.lab, 10.0.0.5,,localhost") == ["gpu1.lab", "10.0.0.5", "localhost"]
    defaults = tls.parse_hosts(None)
    assert "localhost" in defaults and "127.0.0.1" in defaults and len(defaults) >= 2


def test_serve_flags_make_the_certificate_beside_the_database(tmp_path):
    import argparse

    from web.serving import serve_tls

    s = Settings.from_env({"TRADLAB_DB": str(tmp_path / "db" / "tradlab.db")})
    args = argparse.Namespace(self_signed=True, tls_hosts="localhost,127.0.0.1", ssl_certfile=None, ssl_keyfile=None)
    cert, key = serve_tls(args, s)
    assert Path(cert) == tmp_path / "db" / "tls" / "cert.pem" and Path(key).is_file()
    with pytest.raises(SystemExit):
        serve_tls(argparse.Namespace(self_signed=True, tls_hosts=None, ssl_certfile="c.pem", ssl_keyfile="k.pem"), s)
    plain = argparse.Namespace(self_signed=False, tls_hosts=None, ssl_certfile=None, ssl_keyfile=None)
    assert serve_tls(plain, s) == (None, None)


# -- the Space and Docker files, statically ---------------------------------------------------
def _front_matter() -> dict:
    text = (ROOT / "README.md").read_text()
    assert text.startswith("---\n"), "README.md must open with the Space's YAML front matter"
    block = text[4 : text.index("\n---\n", 4)]
    out = {}
    for line in block.splitlines():
        k, _, v = line.partition(":")
        out[k.strip()] = v.strip().strip('"')
    return out


def test_readme_front_matter_matches_the_installed_gradio():
    from importlib.metadata import version

    fm = _front_matter()
    assert fm["sdk"] == "gradio" and fm["app_file"] == "app.py"
    assert fm["sdk_version"] == version("gradio")
    assert fm["python_version"] == "3.11" and fm["pinned"] == "false"
    assert fm["colorFrom"] in {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
    assert 0 < len(fm["short_description"]) <= 60


def test_packages_txt_lists_the_runtime_debian_packages():
    pkgs = [
        ln.strip() for ln in (ROOT / "packages.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")
    ]
    assert {"espeak-ng", "ffmpeg", "fonts-dejavu-core"} <= set(pkgs)


def test_dockerfile_has_both_targets_and_installs_like_the_makefile():
    df = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim-bookworm AS cpu$", df, re.M)
    assert re.search(r"^FROM \$\{CUDA_IMAGE\} AS cuda$", df, re.M)
    make = (ROOT / "Makefile").read_text()
    comet = re.search(r"^COMET := (\S+)", make, re.M).group(1)
    mistral = re.search(r"^MISTRAL_COMMON := (\S+)", make, re.M).group(1)
    assert df.count(f"--no-deps {comet} {mistral}") == 2
    assert df.count("USER 1000:1000") == 2 and df.count("HEALTHCHECK") == 2
    assert 'CMD ["python", "app.py", "--demo"]' in df
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", "data"} <= set(ignore)


def test_model_running_handlers_are_wrapped_on_zerogpu(fake_spaces, monkeypatch):
    import importlib

    import tabs.admin
    import tabs.qe_audit

    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    try:
        importlib.reload(tabs.qe_audit)
        importlib.reload(tabs.admin)
        wrapped = {f.__name__: d for f, d in fake_spaces}
        assert {"_audit_on_gpu": 600, "translate_files": None}.items() <= wrapped.items()
        assert tabs.admin._translate_on_gpu.__name__ == "wrapped"
    finally:
        monkeypatch.delenv("SPACES_ZERO_GPU")
        importlib.reload(tabs.qe_audit)
        importlib.reload(tabs.admin)
    assert tabs.admin._translate_on_gpu.__name__ == "translate_files"  # the identity again


def test_a_forked_child_opens_its_own_connection(tmp_path):
    """ZeroGPU runs each GPU call in a forked process: it must not write through the parent's
    SQLite connection (or wait on a lock a parent thread held at the fork)."""
    import os

    from storage import open_database

    database = open_database(tmp_path / "fork.db")
    parent_conn = database.db.conn
    with database.write() as db:
        db.execute("CREATE TABLE t (pid INTEGER, same INTEGER)")
    pid = os.fork()
    if pid == 0:  # the child: exit code tells the parent what happened
        try:
            with database.write() as db:
                db.execute("INSERT INTO t VALUES (?, ?)", [os.getpid(), int(database.db.conn is parent_conn)])
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert database.query("SELECT pid, same FROM t") == [{"pid": pid, "same": 0}]


# -- start-up under load ----------------------------------------------------------------------
def test_start_probe_waits_out_a_busy_server(monkeypatch):
    """Gradio's own probe gives up on the first 3 s timeout ("localhost is not accessible"),
    which a restart while participants reconnect can cause; the app's probe asks again."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from gradio import networking

    from web.gradio_patches import patient_start_probe

    calls = []

    class Busy(BaseHTTPRequestHandler):
        def do_HEAD(self):
            calls.append(1)
            if len(calls) == 1:
                threading.Event().wait(3.5)  # the first answer comes after gradio's timeout
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        assert networking.url_ok(url) is False  # gradio's probe alone: refused
        monkeypatch.setattr(networking, "url_ok", networking.url_ok)
        calls.clear()
        patient_start_probe(seconds=20)
        assert networking.url_ok(url) is True
        assert len(calls) >= 2
        patient_start_probe(seconds=20)  # idempotent: not wrapped twice
        assert networking.url_ok.patient
    finally:
        server.shutdown()


def test_printed_links_follow_the_port_and_host_the_server_listens_on():
    from web.serving import link_base

    s = Settings.from_env({})
    assert link_base(s, None, None, False) == "http://127.0.0.1:7860"
    assert link_base(s, None, 7891, False) == "http://127.0.0.1:7891"
    assert link_base(s, "10.0.0.5", 8000, True) == "https://10.0.0.5:8000"
    mine = Settings.from_env({"TRADLAB_PUBLIC_URL": "https://study.example.org"})
    assert link_base(mine, None, 7891, True) == "https://study.example.org"  # the team's own address wins
