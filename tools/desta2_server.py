"""DeSTA2 behind an OpenAI-compatible API, for the app's remote backend (preset remote-desta2).

DeSTA2's remote code (DeSTA-ntu/DeSTA2-8B-beta) is written for transformers 4.x, and the app
pins transformers 5, so it runs in its own environment (requirements-desta2.txt) as this server:

    make desta2-server            # or, by hand:
    python -m venv .venv-desta2 && .venv-desta2/bin/pip install -r requirements-desta2.txt
    .venv-desta2/bin/python tools/desta2_server.py --model DeSTA-ntu/DeSTA2-8B-beta --port 8004

It imports nothing of the app (the standard library; torch and transformers once it loads the
model), so it runs in that environment. Endpoints, as the remote backend calls them:
- POST /v1/chat/completions: the last user message's input_audio part (base64 WAV) and text
  become DeSTA2's messages [system, {"role": "audio", "content": PATH}, user]; greedy when
  temperature is 0 (the app sends 0), else sampled with temperature/top_p; max_tokens caps it.
- GET /v1/models.
Errors are {"error": {"message", "type", "code"}}; 401 without the key when --api-key-env names
a set variable. It listens on 127.0.0.1 unless --host says otherwise; one request runs at a time.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import io
import json
import os
import sys
import tempfile
import threading
import time
import uuid
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DEFAULT_SYSTEM = "You are a helpful voice assistant."  # DeSTA2's own example system turn
MAX_BODY = 64 * 1024 * 1024  # a few minutes of 16 kHz WAV, base64


class RequestError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.type = status, message, type_


def load(model: str, dtype: str = "auto", device: str | None = None):
    """DeSTA2 through its remote code (AutoModel, trust_remote_code), on `device` (CUDA when
    there is one), in eval mode. dtype "auto" keeps what its code chooses (DeSTA2 loads its
    Llama in bf16 and its Whisper in fp32, whose inputs it does not cast: a blanket bf16 breaks it)."""
    # lazy import (torch, transformers): heavy; the module stays importable without them
    import torch
    from transformers import AutoModel

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    net = AutoModel.from_pretrained(model, trust_remote_code=True)
    if dtype not in ("", "auto"):
        net = net.to(getattr(torch, dtype))
    return net.to(device).eval()


def messages_for_desta(body: dict, audio_path: str) -> tuple[list[dict], dict]:
    """(DeSTA2 messages, chat() decoding kwargs) from an OpenAI chat body."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "messages must be a non-empty list")
    system = next(
        (
            m.get("content")
            for m in messages
            if isinstance(m, dict) and m.get("role") == "system" and isinstance(m.get("content"), str)
        ),
        DEFAULT_SYSTEM,
    )
    user = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not user:
        raise RequestError(400, "no user message")
    content = user[-1].get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(parts, list):
        raise RequestError(400, "message content must be a string or a list of parts")
    text = "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")
    temperature = body.get("temperature", 1.0)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 512))
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise RequestError(400, "max_tokens must be a positive integer")
    if not isinstance(temperature, (int, float)) or temperature < 0:
        raise RequestError(400, "temperature must be a number >= 0")
    gen = {"max_new_tokens": max_tokens, "do_sample": temperature > 0}
    if temperature > 0:
        gen.update(temperature=float(temperature), top_p=float(body.get("top_p", 1.0)))
    return (
        [
            {"role": "system", "content": system},
            {"role": "audio", "content": audio_path},
            {"role": "user", "content": text},
        ],
        gen,
    )


def audio_of(body: dict) -> bytes:
    """The WAV bytes of the last user message's one input_audio part."""
    user = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    content = user[-1].get("content") if user else None
    clips = (
        [p.get("input_audio") for p in content if isinstance(p, dict) and p.get("type") == "input_audio"]
        if isinstance(content, list)
        else []
    )
    if len(clips) != 1 or not isinstance(clips[0], dict):
        raise RequestError(400, "DeSTA2 takes exactly one input_audio part in the user message")
    if clips[0].get("format") != "wav":
        raise RequestError(400, f"input_audio.format must be 'wav', not {clips[0].get('format')!r}")
    try:
        raw = base64.b64decode(clips[0].get("data") or "", validate=True)
    except (binascii.Error, ValueError) as e:
        raise RequestError(400, f"input_audio.data is not base64: {e}") from e
    try:
        with wave.open(io.BytesIO(raw), "rb") as w:
            w.getnframes()
    except (wave.Error, EOFError) as e:
        raise RequestError(400, f"input_audio.data is not a WAV file ({e})") from e
    return raw


class Desta2Server:
    """The HTTP server around one loaded DeSTA2 (or any model with DeSTA2's chat() and tokenizer)."""

    def __init__(self, model, served_name: str, api_key: str = "", host: str = "127.0.0.1", port: int = 8004):
        self.model, self.served_name, self.api_key = model, served_name, api_key
        self._lock = threading.Lock()  # one generation at a time on the one model
        self._tmp = tempfile.TemporaryDirectory(prefix="desta2-server-")
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self.httpd = ThreadingHTTPServer((host, port), Handler)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def translate(self, body: dict) -> str:
        # lazy import (torch): the module stays importable without it
        import torch

        if body.get("model") != self.served_name:
            raise RequestError(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        raw = audio_of(body)
        path = Path(self._tmp.name) / f"{uuid.uuid4().hex}.wav"
        path.write_bytes(raw)
        try:
            messages, gen = messages_for_desta(body, str(path))
            with self._lock, torch.inference_mode():
                ids = self.model.chat(messages, **gen)  # new tokens only
            return self.model.tokenizer.batch_decode(ids, skip_special_tokens=True)[0].strip()
        finally:
            path.unlink(missing_ok=True)

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> "Desta2Server":
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="desta2-server").start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._tmp.cleanup()


class _Handler(BaseHTTPRequestHandler):
    server_owner: Desta2Server
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # one line per request, without the body
        print(f"{self.address_string()} {fmt % args}", flush=True)

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, e: RequestError) -> None:
        self._send(e.status, {"error": {"message": e.message, "type": e.type, "param": None, "code": e.status}})

    def _authorised(self) -> bool:
        key = self.server_owner.api_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._error(RequestError(401, "Incorrect API key provided.", "authentication_error"))
            return False
        return True

    def do_GET(self):
        if not self._authorised():
            return
        if self.path.rstrip("/") == "/v1/models":
            self._send(
                200,
                {
                    "object": "list",
                    "data": [{"id": self.server_owner.served_name, "object": "model", "owned_by": "desta2-server"}],
                },
            )
        else:
            self._error(RequestError(404, f"Not found: {self.path}", "NotFoundError"))

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            self._error(RequestError(413, f"request body over {MAX_BODY} bytes"))
            return
        raw = self.rfile.read(length)
        if not self._authorised():
            return
        try:
            if self.path.rstrip("/") != "/v1/chat/completions":
                raise RequestError(404, f"Not found: {self.path}", "NotFoundError")
            try:
                body = json.loads(raw)
            except ValueError as e:
                raise RequestError(400, f"Request body is not valid JSON: {e}") from e
            if not isinstance(body, dict):
                raise RequestError(400, "Request body must be a JSON object")
            text = self.server_owner.translate(body)
        except RequestError as e:
            self._error(e)
            return
        except Exception as e:  # a model failure is the server's 500, in its own words
            self._error(RequestError(500, f"{type(e).__name__}: {e}", "InternalServerError"))
            return
        self._send(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.server_owner.served_name,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            },
        )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python tools/desta2_server.py", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="DeSTA-ntu/DeSTA2-8B-beta", help="hub id (already downloaded) or folder")
    p.add_argument("--served-model-name", default="", help="the name requests use (default: --model)")
    p.add_argument("--dtype", default="auto", help="auto (default: as the model's code loads it), or a torch dtype")
    p.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda when there is one)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8004)
    p.add_argument("--api-key-env", default="", help="a variable holding the bearer key requests must carry")
    a = p.parse_args(argv)
    key = os.environ.get(a.api_key_env, "") if a.api_key_env else ""
    server = Desta2Server(load(a.model, a.dtype, a.device), a.served_model_name or a.model, key, a.host, a.port)
    # the versions it really runs under (its environment pins them: requirements-desta2.txt)
    versions = ", ".join(f"{name} {sys.modules[name].__version__}" for name in ("transformers", "torch"))
    print(f"DeSTA2 ({a.model}) serving at {server.base_url} ({versions})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
