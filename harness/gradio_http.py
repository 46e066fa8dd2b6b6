"""A light Gradio client: one browser session on a page of the app.

GradioHTTP speaks the protocol the browser and gradio_client speak (one session per page:
POST /gradio_api/call/<api> with the session hash, then the event's SSE stream) with
gradio_client's predict() signature, at a fraction of its cost. Measured on the 2-core
machine: a no-op event takes ~15 ms through GradioHTTP and ~170 ms through
gradio_client.Client.predict; 50 raters x 20 DA submits took 50 s with GradioHTTP (6 s of
client CPU) and with 50 gradio_client.Client 142 s of wall and of client CPU (a whole core,
next to the server), 26 % of the submits unfinished and Client constructions timing out.
"""

from __future__ import annotations

import json
import ssl
import threading
import uuid
from pathlib import Path

import httpx


# -- a light client ----------------------------------------------------------------------------
class ServerGone(ConnectionError):
    """The server did not answer (refused, reset, or the stream ended without a result):
    whether the request ran is unknown."""


class AppError(Exception):
    """The server answered with an error event; the message is what Gradio shows."""


_SSL: list = []


def _ssl_context() -> ssl.SSLContext:
    """One context for every client (loopback HTTP needs none, but httpx builds one per client,
    loading the CA bundle: ~30 ms of CPU each, which 50 clients and their reconnects notice)."""
    if not _SSL:
        _SSL.append(ssl.create_default_context())
    return _SSL[0]


class GradioHTTP:
    """One browser session on a Gradio app: predict(*inputs, api_name="/x") -> outputs."""

    def __init__(self, url: str, timeout: float = 60.0):
        self.root = url.rstrip("/")
        self.session_hash = uuid.uuid4().hex[:11]
        self.http = httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0), verify=_ssl_context())

    def close(self) -> None:
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def base(self, api_name: str = "", tab: str | None = None) -> str:
        """Where an endpoint is served: its role's page (/<role>/gradio_api) or "/"'s; a view of
        a tab is asked on the tab's page, as that page's browser does."""
        from web.site import page_of_api

        page = page_of_api(f"{tab}_{api_name}" if tab else api_name)
        return f"{self.root}/{page}/gradio_api" if page else f"{self.root}/gradio_api"

    _queued: dict = {}  # page base -> {api name: whether its event goes through the queue}
    _config_lock = threading.Lock()

    def queued(self, base: str, api: str) -> bool:
        """Whether the page sends this event through Gradio's queue (the page's config says; the
        app's participant events do not: tabs/common.PARTICIPANT_EVENT). One fetch of a page's
        config per process: a browser has it from the page's load, and fifty clients starting
        at once each fetching it (a deep copy of the page's config: 4.7 ms of server CPU for the
        demo's receiver page) would be in the first calls' latency."""
        with GradioHTTP._config_lock:
            if base not in GradioHTTP._queued:
                r = self.http.get(base.removesuffix("/gradio_api") + "/config")
                r.raise_for_status()
                GradioHTTP._queued[base] = {
                    d.get("api_name"): d.get("queue") is not False for d in r.json().get("dependencies", [])
                }
        return GradioHTTP._queued[base].get(api, True)

    def predict(self, *data, api_name: str):
        api = api_name.lstrip("/")
        tab = data[1] if api == "view" and len(data) > 1 and isinstance(data[1], str) else None
        base = self.base(api, tab)
        try:
            # json.dumps writes NaN and Infinity as JavaScript does (httpx's json= refuses them)
            body = json.dumps({"data": list(data), "session_hash": self.session_hash})
            if not self.queued(base, api):
                # as the browser calls an event outside the queue: one POST, the outputs in its answer
                r = self.http.post(
                    f"{base}/api/{api}", content=body.encode(), headers={"content-type": "application/json"}
                )
                try:
                    out = r.json()
                except ValueError:
                    out = None
                if not isinstance(out, dict) or "data" not in out:  # the error, as the queue's stream says it
                    raise AppError(
                        str(out["error"])
                        if isinstance(out, dict) and "error" in out
                        else f"HTTP {r.status_code}: {r.text[:500]}"
                    )
                payload = out["data"]
                return payload[0] if len(payload) == 1 else payload
            r = self.http.post(
                f"{base}/call/{api}", content=body.encode(), headers={"content-type": "application/json"}
            )
            if r.status_code != 200:
                raise AppError(f"HTTP {r.status_code}: {r.text[:500]}")
            event_id = r.json()["event_id"]
            with self.http.stream("GET", f"{base}/call/{api}/{event_id}") as s:
                event = None
                for line in s.iter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event in ("complete", "error"):
                        payload = json.loads(line[5:].strip() or "null")
                        if event == "complete":
                            return payload[0] if len(payload) == 1 else payload
                        msg = payload.get("error") if isinstance(payload, dict) else payload
                        raise AppError(str(msg))
        except (httpx.TransportError, ConnectionError) as e:
            raise ServerGone(f"{type(e).__name__}: {e}") from e
        raise ServerGone("the event stream ended without a result")

    def upload(
        self, data: bytes, filename: str, mime: str = "application/octet-stream", api_name: str = "record_submit"
    ) -> dict:
        """A file sent the way the browser's upload does, to the page of the event that will take
        it (api_name); returns the FileData an input takes."""
        try:
            r = self.http.post(f"{self.base(api_name)}/upload", files=[("files", (filename, data, mime))])
        except (httpx.TransportError, ConnectionError) as e:
            raise ServerGone(f"{type(e).__name__}: {e}") from e
        if r.status_code != 200:
            raise AppError(f"HTTP {r.status_code}: {r.text[:500]}")
        return file_data(r.json()[0], filename)


def file_data(path: str, name: str | None = None) -> dict:
    return {"path": path, "orig_name": name or Path(path).name, "meta": {"_type": "gradio.FileData"}}
