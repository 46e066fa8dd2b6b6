"""Issue 17, points 3 and 7: no file reaches a handler except an upload to this server, and the
app's data at rest is private to its user.

The app runs with a local counting HTTP server as its HTTP(S) proxy (the loopback address
direct): every request the app would make to the outside world (a download of a file URL, the
DNS-over-HTTPS look-up that gradio's SSRF check makes for a private address) reaches that
server and is counted; a URL pointing straight at it (http://127.0.0.1:PORT/...) is counted
too. Nothing leaves the machine either way."""

from __future__ import annotations

import json
import os
import stat
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from harness.app import ADMIN_SECRET, RunningApp
from harness.demo import DEMO
from tests.helpers.app import token_of

# every component type whose value is a file (an upload when it is interactive)
FILE_KINDS = {"audio", "file", "uploadbutton", "image", "video", "gallery", "model3d", "multimodaltextbox"}
TEXT = {"textbox", "markdown", "html", "state"}


class Counting(BaseHTTPRequestHandler):
    hits: list = []

    def _hit(self):
        type(self).hits.append((self.command, self.path, self.headers.get("Host")))
        body = b"RIFF\x24\x00\x00\x00WAVEfmt "  # something that looks like audio
        self.send_response(200)
        self.send_header("Content-Type", "audio/wav")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = _hit

    def do_CONNECT(self):  # an https request through the proxy: refused after counting
        type(self).hits.append((self.command, self.path, self.headers.get("Host")))
        self.send_response(403)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def counter():
    Counting.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def app(tmp_path_factory, counter):
    tmp = tmp_path_factory.mktemp("private")
    (tmp / "tmp").mkdir()
    proxy = counter.url
    app = RunningApp(
        tmp,
        {
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "http_proxy": proxy,
            "https_proxy": proxy,
            "ALL_PROXY": "",
            "all_proxy": "",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "TMPDIR": str(tmp / "tmp"),
            "GRADIO_TEMP_DIR": str(tmp / "gradio"),
            "HF_HUB_OFFLINE": "1",
        },
    )
    assert app.cli("import", str(DEMO)).returncode == 0
    for role in ("receiver", "rater"):
        assert app.cli("participants", "add", "--study", "demo", "--role", role, "--count", "1").returncode == 0
    app.add_participants("sender", 1, "USW", "Woman")
    app.start()
    yield app
    app.stop()


class Session:
    """One browser session: events by fn_index through the queue (private ones included)."""

    def __init__(self, url: str, page: str = ""):
        page_url = f"{url}/{page}" if page else url  # a role's page is a Blocks of its own
        self.base = page_url + "/gradio_api"
        self.hash = uuid.uuid4().hex[:11]
        self.http = httpx.Client(timeout=60, trust_env=False)
        self.config = self.http.get(page_url + "/config").json()

    def call(self, fn_index: int, data: list) -> dict:
        """The process_completed message: {"success": bool, "output": {...}}."""
        dep = self.config["dependencies"][fn_index]
        r = self.http.post(
            f"{self.base}/queue/join",
            json={
                "data": data,
                "fn_index": fn_index,
                "session_hash": self.hash,
                "event_data": None,
                "trigger_id": dep["targets"][0][0] if dep.get("targets") else None,
            },
        )
        assert r.status_code == 200, r.text
        with self.http.stream("GET", f"{self.base}/queue/data", params={"session_hash": self.hash}) as s:
            for line in s.iter_lines():
                if line.startswith("data:"):
                    msg = json.loads(line[5:])
                    if msg.get("msg") == "process_completed":
                        return msg
        raise AssertionError("no result")

    def by_name(self, api_name: str) -> int:
        return next(i for i, d in enumerate(self.config["dependencies"]) if d.get("api_name") == api_name)

    def upload(self, data: bytes, name: str) -> dict:
        r = self.http.post(f"{self.base}/upload", files=[("files", (name, data, "application/octet-stream"))])
        assert r.status_code == 200, r.text
        return {"path": r.json()[0], "orig_name": name, "meta": {"_type": "gradio.FileData"}}


def file_events(config: dict) -> list[tuple[int, dict]]:
    comps = {c["id"]: c for c in config["components"]}
    out = []
    for i, dep in enumerate(config["dependencies"]):
        if dep.get("backend_fn", True) and any(comps[c]["type"] in FILE_KINDS for c in dep["inputs"]):
            out.append((i, dep))
    return out


def args_for(config: dict, dep: dict, text: str, file_value) -> list:
    comps = {c["id"]: c for c in config["components"]}
    args = []
    for cid in dep["inputs"]:
        c = comps[cid]
        if c["type"] in FILE_KINDS:
            many = c.get("props", {}).get("file_count") in ("multiple", "directory")
            args.append([file_value] if many else file_value)
        elif c["type"] in TEXT:
            args.append(text)
        elif c["type"] in ("number", "slider"):
            args.append(1)
        else:
            args.append(None)
    return args


def url_file(url: str) -> dict:
    return {"path": url, "url": url, "orig_name": Path(url).name, "meta": {"_type": "gradio.FileData"}}


def admin(session: Session) -> str:
    msg = session.call(session.by_name("admin_login"), [ADMIN_SECRET])
    assert msg["success"], msg
    return msg["output"]["data"][0]


def test_no_file_event_fetches_a_url(app, counter):
    from web.site import role_pages

    sessions = [Session(app.url, page) for page in ("", *role_pages())]
    events = [(s, i, dep) for s in sessions for i, dep in file_events(s.config)]
    names = {d.get("api_name") for _, _, d in events}
    # the app's upload inputs: a sender's recording, the study zip, a system try-out, a questions CSV
    assert {"record_submit", "admin_import", "admin_try_system"} <= names, names
    session = admin(sessions[0])
    sender = token_of(app.links()["sender"][0])
    Counting.hits.clear()
    answers = []
    for url in (
        f"{counter.url}/direct/a.wav",
        "http://huggingface.co/through-the-proxy/b.wav",
        "https://example.org/c.wav",
    ):
        for s, i, dep in events:
            for cred in (session, sender):
                for meta in (True, False):  # with gradio's meta, and without
                    one = f"{url}?n={len(answers)}"  # a new URL each time (gradio caches by URL)
                    value = url_file(one) if meta else {"path": one}
                    answers.append((dep.get("api_name") or i, s.call(i, args_for(s.config, dep, cred, value))))
    print(f"outbound requests while {len(events)} file events got {len(answers)} URL files: {len(Counting.hits)}")
    assert Counting.hits == [], Counting.hits
    for name, msg in answers:  # refused before the handler, saying why
        assert not msg["success"] and "uploaded to this server" in json.dumps(msg), (name, msg)


def test_the_file_route_proxies_nothing(app, counter):
    Counting.hits.clear()
    codes = {}
    with httpx.Client(timeout=30, trust_env=False) as http:
        for url in (f"{counter.url}/direct/a.wav", "http://huggingface.co/x.wav", "https://example.org/c.wav"):
            for path in (
                f"/gradio_api/file={url}",
                f"/gradio_api/file={url.replace('://', '%3A%2F%2F')}",
                f"/gradio_api/proxy={url}",
            ):
                codes[path] = http.get(app.url + path).status_code
    print(f"outbound requests from /file=<url> and /proxy=<url>: {len(Counting.hits)}")
    assert Counting.hits == [], Counting.hits
    # /file=<url>: refused (403); /proxy=: not a route the pages use, so the Guard's allowlist
    # answers 404 before Gradio sees it (issue 30.2)
    assert {c for p, c in codes.items() if "/file=" in p} == {403}, codes
    assert {c for p, c in codes.items() if "/proxy=" in p} <= {403, 404}, codes


def test_a_strangers_upload_is_not_kept(app):
    page = Session(app.url, "sender")
    stranger = page.upload(b"RIFF....WAVEfmt not really audio", "stranger.wav")
    assert Path(stranger["path"]).exists()
    msg = page.call(page.by_name("record_submit"), ["forged-token-0000000000", "1", stranger])
    assert msg["success"], msg
    assert not Path(stranger["path"]).exists(), "an upload with no valid token stayed on the server"
    # an admin's upload stays until the cache expires (the handler may have refused it)
    s = Session(app.url)
    session = admin(s)
    mine = s.upload(b"PK not a zip", "study.zip")
    msg = s.call(s.by_name("admin_import"), [session, mine])
    assert msg["success"], msg
    assert Path(mine["path"]).exists()


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_data_at_rest_is_private(app):
    db = Path(app.env["TRADLAB_DB"])
    assert _mode(db) == 0o600, oct(_mode(db))
    for side in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if side.exists():
            assert _mode(side) == 0o600, (side, oct(_mode(side)))
    media = Path(app.env["TRADLAB_MEDIA"])
    if media.exists():
        assert _mode(media) == 0o700, oct(_mode(media))
        for sub in media.rglob("*"):
            assert _mode(sub) == (0o700 if sub.is_dir() else 0o600), (sub, oct(_mode(sub)))
    res = app.cli("backup", str(app.tmp / "backups" / "copy.db"))
    assert res.returncode == 0, res.stderr
    assert _mode(app.tmp / "backups") == 0o700
    assert _mode(app.tmp / "backups" / "copy.db") == 0o600
    res = app.cli("export", "--study", "demo", "--out", str(app.tmp / "export"))
    assert res.returncode == 0, res.stderr
    assert _mode(app.tmp / "export") == 0o700
    for p in (app.tmp / "export").rglob("*"):
        assert _mode(p) == (0o700 if p.is_dir() else 0o600), (p, oct(_mode(p)))


def test_downloads_leave_no_temporary_copy(app):
    s = Session(app.url)
    session = admin(s)
    tmp = Path(app.env["TMPDIR"])
    for name, extra in (
        ("admin_export", ["csv", False, False]),
        ("admin_participants_links_csv", []),
        ("admin_completions_csv", []),
    ):
        msg = s.call(s.by_name(name), [session, "demo", *extra])
        assert msg["success"], msg
        files = [v for v in msg["output"]["data"] if isinstance(v, dict) and v.get("path")]
        assert files, (name, msg)
        served = Path(files[0]["path"])
        assert _mode(served) == 0o600, (name, oct(_mode(served)))
        assert Path(app.env["GRADIO_TEMP_DIR"]) in served.parents, served
        left = [p.name for p in tmp.iterdir() if p.name.startswith(("tradlab-", "questions-"))]
        assert not left, (name, left)


def test_no_token_in_the_server_log(app):
    links = app.links()
    tokens = [token_of(u) for urls in links.values() for u in urls]
    s = Session(app.url)
    with httpx.Client(timeout=30, trust_env=False) as http:
        for u in (u for urls in links.values() for u in urls):
            assert http.get(u, follow_redirects=True).status_code == 200  # to the role's page
            http.get(u.replace("/?", "/gradio_api/info?"))
            http.get(u.replace("/?", "/no-such-page?"))
    for role, tab in (("receiver", "receiver"), ("rater", "da"), ("sender", "record")):
        tok = token_of(links[role][0])
        s.call(s.by_name("view"), [tok, tab])
        sender_page = Session(app.url, "sender")
        sender_page.call(sender_page.by_name("record_submit"), [tok, "no-such-item", None])
    log = (app.tmp / "server.log").read_text(errors="replace")
    assert not [t for t in tokens if t in log], log[-2000:]
    audit = json.dumps(app.rows("SELECT * FROM events"), default=str)
    assert not [t for t in tokens if t in audit]


def test_media_files_are_written_for_the_apps_user_only(tmp_path):
    """Recordings, synthesised audio and rendered images (services/common/media_files.atomic_write)."""
    from services.common.media_files import atomic_write

    path = atomic_write(tmp_path / "media" / "recordings" / "x.wav", b"RIFF")
    assert _mode(path) == 0o600, oct(_mode(path))


def test_the_report_and_analysis_files_leave_no_temporary_copy(demo_db, tmp_path, monkeypatch):
    """Issue 49: the Analysis tab's report (the study's results and settings) stayed in the app's
    temporary folder for ever after Gradio took its copy. The report's and each panel's files are
    now moved into gradio's cache (0600, expired with it) and the run's folder is removed, also
    when the run is refused."""
    import tempfile

    import gradio as gr

    from services.admin import auth as admin_auth
    from tabs import analysis
    from tabs.common import Ctx

    tmp, cache = tmp_path / "tmp", tmp_path / "gradio"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(cache))
    auth = admin_auth.AdminAuth("pw")
    with gr.Blocks() as page:
        analysis.build(Ctx(demo_db, None, gr.Textbox(visible=False)), auth, gr.Textbox())
    events = {getattr(f.fn, "__name__", ""): f for f in page.fns.values()}
    session = auth.login("pw", None)
    served = 0
    for name, args in (
        ("run_report", ("demo", None, None, None)),
        ("run_report", ("nope", None, None, None)),  # refused: "no study 'nope'"
        ("run_da", ("demo", None, None)),
        ("run_sd", ("demo", None, True, "kaiser")),
    ):
        out = events[name].fn(session, *args)
        files = [p for c, v in out.items() if isinstance(c, gr.File) and v for p in v]
        assert all(cache in Path(p).parents and _mode(p) == 0o600 for p in files), (name, files)
        assert list(tmp.iterdir()) == [], (name, list(tmp.iterdir()))  # before: report-demo-..., da-demo-...
        served += len(files)
    report = [
        p
        for c, v in events["run_report"].fn(session, "demo", None, None, None).items()
        if isinstance(c, gr.File)
        for p in v
    ]
    assert report[0].endswith("report-demo.html") and "Table 1" in Path(report[0]).read_text(encoding="utf-8")
    # two downloads, not one flat file each: the HTML and a .zip of it with its folders, in which
    # every relative link of the HTML resolves (issue 51, point 9)
    import re
    import zipfile

    assert len(report) == 2 and report[1].endswith("report-demo.zip")
    names = set(zipfile.ZipFile(report[1]).namelist())
    html = Path(report[0]).read_text(encoding="utf-8")
    links = {h for h in re.findall(r'href="([^"#:]+)"', html) if not h.startswith("/")}
    assert "report-demo.html" in names and links <= names, sorted(links - names)[:5]
    # the demo has no judgments yet, so its panels write no tables: two protocols' tables of one name
    from tabs.admin_common import served as serve
    from tabs.analysis_common import run_folder

    with run_folder("report", "demo") as folder:
        for sub in ("da", "sd"):
            (Path(folder) / sub).mkdir()
            (Path(folder) / sub / "systems.csv").write_text(sub)
        moved = serve([Path(folder) / "da" / "systems.csv", Path(folder) / "sd" / "systems.csv"], folder)
    assert [Path(p).read_text() for p in moved] == ["da", "sd"] and list(tmp.iterdir()) == []
    assert [Path(p).relative_to(Path(moved[0]).parents[1]).as_posix() for p in moved] == [
        "da/systems.csv",
        "sd/systems.csv",
    ]
    print(f"report and panels: {served} files served from gradio's cache, 0 left in the temporary folder")
