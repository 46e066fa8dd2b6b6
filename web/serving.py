"""Serving the app: TLS, launch (the role pages' queues started, warmed up), the worker, and the
demo's and the passwordless admin's links printed at start."""

import sys
from pathlib import Path

from web.app import build_app, middleware, mount_pages, page_options
from web.form_routes import form_routes
from web.gradio_patches import (
    few_files_per_upload,
    lean_sessions,
    patient_start_probe,
    quiet_queues,
    same_origin_cors,
    slow_clients_cut_off,
    upload_parts_on_loop,
    without_addresses,
)
from web.middleware import trusted_origins
from web.site import Site
from web.uploads import expire_unused_uploads


def start_pages(site: Site, local_url: str, verify: bool) -> None:
    """Start each mounted page's queue the way launch() starts "/"'s: its startup-events call
    (a mounted app's own lifespan never runs under another app)."""
    import httpx

    for role in site.pages:
        httpx.get(f"{local_url.rstrip('/')}/{role}/gradio_api/startup-events", verify=verify, timeout=60)


def serve_tls(args, settings) -> tuple[str | None, str | None]:
    """(certfile, keyfile) for launch(): the given files, a self-signed pair, or (None, None)."""
    if not args.self_signed:
        if args.tls_hosts:
            raise SystemExit("--tls-hosts goes with --self-signed")
        return args.ssl_certfile, args.ssl_keyfile
    if args.ssl_certfile or args.ssl_keyfile:
        raise SystemExit("--self-signed makes its own certificate: leave out --ssl-certfile/--ssl-keyfile")
    from services.common import tls

    hosts = tls.parse_hosts(args.tls_hosts)
    cert, key = tls.make_self_signed(Path(settings.db_path).parent / "tls", hosts)
    print(
        f"HTTPS with a self-signed certificate for {', '.join(hosts)}: {cert}\n"
        f"  SHA-256 {tls.fingerprint(cert)} (browsers warn once; compare this fingerprint)"
    )
    return str(cert), str(key)


# After every event Gradio recomputes its monitoring summary with pandas over up to 10,000
# recorded events (queueing.compute_analytics_summary): tens of ms per answer late in a study.
# Every 500 events is fresh enough for the monitoring page, which the app does not enable.
ANALYTICS_EVERY = "500"


def link_base(settings, host: str | None, port: int | None, tls: bool) -> str:
    """The base of the participant links the server prints: TRADLAB_PUBLIC_URL or the Space's
    address when there is one, else the address the server listens on (--host and --port
    included: `app.py --demo --port 7891` printed links to :7860), https when it serves TLS."""
    url = settings.public_url
    if settings.get("TRADLAB_PUBLIC_URL") or settings.on_space:
        return url
    url = f"http://{host or settings.host}:{port or settings.port}"
    return "https://" + url[len("http://") :] if tls else url


def port_taken(host: str, port: int) -> str:
    """A one-line message when the address cannot be served on (something listens there already,
    often the app itself started earlier), naming how to pick another port; "" when it is free."""
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a closed server's port is free
        try:
            s.bind((host, port))
        except OSError as e:
            return (
                f"Port {port} on {host} is already in use ({e.strerror}): is the app already running? "
                f"Stop it, or serve on another port: TRADLAB_PORT={port + 1} python app.py (make run "
                f"TRADLAB_PORT={port + 1}), or python app.py --port {port + 1}."
            )
    return ""


def serve(args, settings, connect):
    """Serve the app until stopped: args are `serve`'s options, connect() opens the database."""
    import dataclasses
    import os

    from services.participation import rate_limit

    rate_limit.configure(settings.rate_limit)  # per participant link, in the served app only

    # not a setting of this app: gradio's own variable, given a value for the served process
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", ANALYTICS_EVERY)

    from services.common.settings import space_storage_warning

    certfile, keyfile = serve_tls(args, settings)
    settings = dataclasses.replace(settings, public_url=link_base(settings, args.host, args.port, bool(certfile)))
    warning = space_storage_warning(settings.environ)
    if warning:
        print(warning, file=sys.stderr)
    host = args.host or settings.host
    port = args.port or settings.port
    taken = port_taken(host, port)
    if taken:  # before the demo's minute of set-up; gradio's own error names a variable this app ignores
        print(taken, file=sys.stderr)
        return 2
    from services.admin.auth import exposure_warning

    exposed = exposure_warning(host, settings.admin_password, settings.on_space, args.root_path)
    if exposed:
        print(exposed, file=sys.stderr)
    if not settings.admin_password and not settings.admin_secret:
        # the passwordless admin's key, new each start; only this terminal sees it (admin_link)
        import secrets

        settings = dataclasses.replace(settings, admin_secret=secrets.token_urlsafe(24))
    database = connect()
    if args.demo:
        ensure_demo(database, settings)
    elif not settings.admin_password:
        print(admin_link(settings), flush=True)
    site = build_app(settings, database)
    demo = site.team
    same_origin_cors(trusted_origins(settings))  # before any page's app is made (queue, mount, launch)
    demo.queue(default_concurrency_limit=16)
    patient_start_probe()
    lean_sessions()
    slow_clients_cut_off(
        settings.header_timeout, settings.max_connections, settings.connections_per_client, settings.body_timeout
    )
    few_files_per_upload()
    upload_parts_on_loop()
    options = page_options(settings)
    mounts = mount_pages(site, root_path=args.root_path, server_name=host, server_port=port, **options)
    routes = form_routes(site.pages, database) if settings.form_routes else []  # ahead of their pages' mounts
    demo.launch(
        server_name=host,
        server_port=port,
        # ssl_verify only concerns gradio's start-up probe of its own local URL
        # (https://localhost:PORT), which a self-signed or a public-name certificate fails
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        ssl_verify=not certfile,
        root_path=args.root_path,
        **options,
        app_kwargs={"routes": routes + mounts, "middleware": middleware(site, settings, database)},
        prevent_thread_lock=True,
    )
    for blocks in site.blocks:
        without_addresses(blocks.config)
    expire_unused_uploads(site)
    quiet_queues(site)
    start_pages(site, demo.local_url, verify=not certfile)
    warm_up(site, demo.local_url, verify=not certfile)
    freeze_start_up_objects()
    # the worker starts once the server answers: jobs resumed at start (model loads, a HIT's
    # images or audio) would otherwise slow gradio's own start-up probe of "/" past its 3 s
    # timeout, and launch() gives up ("localhost is not accessible")
    if settings.worker:
        from services.common.jobs_worker import Worker
        from services.participation import maintenance, worker_jobs

        maintenance.schedule_all(database)  # drop-out detection and the workflow's repair, periodic
        Worker(database, worker_jobs.handlers(database, media_dir=settings.media_dir)).start()
    demo.block_thread()


def freeze_start_up_objects() -> None:
    """What the start-up made (the modules, Gradio's pages and their configs) lives as long as the
    process: the garbage collector's full passes walked all of it, 100-280 ms each with the
    interpreter held (measured at start on the 2-core machine), and since the item forms' actions
    run on the event loop (web/action_line.py) every participant would wait through one. Frozen
    (gc.freeze), those objects are left out of every later pass."""
    import gc

    gc.collect()
    gc.freeze()


def warm_up(site: Site, local_url: str, verify: bool) -> None:
    """What a process does once, done in the background before the first participant asks
    (warm_pages): the first load of each page was 0.3-0.6 s slower than the next without it."""
    import threading

    import httpx

    def run():
        with httpx.Client(verify=verify, timeout=60, headers={"accept-encoding": "gzip"}) as client:
            try:
                warm_pages(site.pages, lambda path: client.get(local_url.rstrip("/") + path))
            except httpx.HTTPError:  # a warm-up only: the first participant pays instead
                pass

    threading.Thread(target=run, name="warm-up", daemon=True).start()


def warm_pages(pages: dict, get) -> list[str]:
    """Find the fonts of the DA text images (fontconfig, a dozen subprocesses: about 0.15 s on the
    first DA item), then get(path) each role's page and each bundle file it names once, as a
    browser would: Gradio's first render of a page, its preload hints, the in-memory bundle
    files. pages: role -> its Blocks. Returns the paths asked for."""
    from services.da.render import font_chain
    from tabs import preload

    font_chain()
    asked, seen = [], set()
    for role, page in pages.items():
        asked.append(f"/{role}/")
        get(asked[-1])
        for name in preload.page_files(preload.config_types(page)):
            if name not in seen:
                seen.add(name)
                asked.append(f"/{role}/assets/{name}")
                get(asked[-1])
    return asked


def ensure_demo(database, settings):
    """Import the demo study and give it one participant per role (only the first time)."""
    from services.setup.enrolment import links
    from services.setup.importer import import_study
    from services.study.files import StudyValidationError
    from storage import participants

    try:
        res = import_study(database, settings.demo_study, actor="demo")
        sid, status = res.study_id, res.status
    except StudyValidationError:
        # a database whose demo has participants and predates this version's demo files: it is
        # kept as it is (its data stays); a new TRADLAB_DB gets the current demo
        sid, status = "demo", "kept: this database's demo has participants and older content"
        if not participants.list_for_study(database, sid):
            raise
    if not participants.list_for_study(database, sid):
        from services.setup.demo import add_demo_participants

        print("Demo: " + add_demo_participants(database, sid, settings.media_dir))
    print(f"Demo study '{sid}' ({status}). One link per role:")
    seen = set()
    for row in links(database, sid, settings.public_url):
        if row["role"] not in seen:
            seen.add(row["role"])
            print(f"  {row['role']:<10} {row['url']}")
    print(
        f"  admin      {settings.public_url}/  (Admin tab)" if settings.admin_password else f"  {admin_link(settings)}"
    )


def admin_link(settings) -> str:
    """The line naming the passwordless admin's link (services.admin.auth: the secret is its key)."""
    return (
        f"Admin link (no TRADLAB_ADMIN_PASSWORD set; the link is the key, keep it to yourself): "
        f"{settings.public_url}/?admin={settings.admin_secret}"
    )
