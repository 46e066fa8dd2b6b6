"""Backends that call a model served elsewhere through an OpenAI-compatible HTTP API
(e.g. `vllm serve mistralai/Voxtral-Small-24B-2507` on a GPU box).

base_url is the API root including the version, e.g. http://gpu-box:8000/v1.

- RemoteSpeechLLM: audio + instruction -> text, via /chat/completions with an input_audio part.
- RemoteASR:       audio -> transcript, via /audio/transcriptions (multipart upload).
- RemoteMT:        text -> text, via /chat/completions, one request per text.

Where requests may go: loopback, the hosts in TRADLAB_REMOTE_HOSTS and the hosts of the
server's own TRADLAB_LLM_BASE_URL / TRADLAB_GEMBA_BASE_URL, checked before every request (and
at study import, with the prefix a study's api_key_env must carry: endpoint_problems).

Errors: an unreachable server or a missing key variable raises BackendUnavailable (something
to start or configure); an HTTP error, a timeout or a malformed reply raises RuntimeError
with the server's own words. There is no retry loop here: the job worker retries.
"""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from services.common.settings import SETTINGS, Settings
from services.common.settings import current as current_settings
from services.models.backends import BackendUnavailable, ServerUnreachable

ERROR_CHARS = 300  # how much of a server's error message an exception quotes


# Variables that are never an API key: the app's own settings (the admin password among them)
# and well-known credentials of other services. A key variable naming one is refused at
# request time, whatever configured it.
NEVER_KEYS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "AWS_SECRET_ACCESS_KEY")
SERVER_URL_VARS = ("TRADLAB_LLM_BASE_URL", "TRADLAB_GEMBA_BASE_URL")  # set by the server's operator


def _host_port(url: str) -> tuple[str, int | None]:
    try:
        parts = urlsplit((url or "").strip())
        return (parts.hostname or "").lower().rstrip("."), parts.port
    except ValueError:
        return "", None


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _settings(environ=None) -> Settings:
    """The process's settings, or those of an environment a caller (a test) passes."""
    return current_settings() if environ is None else Settings.from_env(environ)


def allowed_hosts(environ=None) -> set[str]:
    """The hosts (name, or name:port) besides loopback that model requests may go to: the
    TRADLAB_REMOTE_HOSTS allow-list and the hosts of the server's own model URLs."""

    env = _settings(environ)
    out = {h.strip().lower().rstrip(".") for h in env.remote_hosts.replace(" ", ",").split(",") if h.strip()}
    for var in SERVER_URL_VARS:
        host, port = _host_port(env.get(var))
        if host:
            out.add(host if port is None else f"{host}:{port}")
    return out


def host_allowed(url: str, environ=None) -> bool:
    """Loopback, or a host the server's settings allow (an entry without a port allows any port)."""
    host, port = _host_port(url)
    if not host:
        return False
    if _is_loopback(host):
        return True
    allowed = allowed_hosts(environ)
    return host in allowed or (port is not None and f"{host}:{port}" in allowed)


def host_refusal(url: str) -> str:
    host, _ = _host_port(url)
    return (
        f"the host '{host or url}' is not allowed: model requests go only to loopback or to hosts the "
        f"server allows in TRADLAB_REMOTE_HOSTS"
    )


def key_env_problem(name: str, environ=None) -> str | None:
    """Why a study may not name this variable as its API key (None when it may): the name must
    start with the server's TRADLAB_KEY_PREFIX."""

    if not name:
        return None
    prefix = _settings(environ).key_prefix
    if not isinstance(name, str) or not name.startswith(prefix) or name == prefix:
        return (
            f"'{name}' is not allowed: a study's API-key variable must start with {prefix} "
            f"(the server's TRADLAB_KEY_PREFIX)"
        )
    return None


def endpoint_problems(url_fields: dict, key_env: str | None = None, environ=None) -> list[tuple[str, str]]:
    """(field, message) for a study's remote endpoint settings, checked at import: each URL's
    host must be allowed, the key variable must carry the prefix."""
    out = []
    for key, url in url_fields.items():
        if isinstance(url, str) and url.strip() and not host_allowed(url, environ):
            out.append((key, host_refusal(url)))
    msg = key_env_problem(key_env, environ) if key_env else None
    if msg:
        out.append(("api_key_env", msg))
    return out


def _never_key(name: str) -> bool:

    return name in NEVER_KEYS or name in {n for n, _, _ in SETTINGS}


def _base(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise BackendUnavailable(
            f"Remote backend URL {url!r} must start with http:// or https:// "
            "and end with the API version, e.g. http://gpu-box:8000/v1"
        )
    return url


def _server_message(resp: httpx.Response) -> str:
    """The error text servers put in their body: OpenAI {"error": {"message"}}, vLLM's older
    {"message"}, FastAPI {"detail"}; otherwise the raw body."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    msg = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = err.get("message")
        elif isinstance(err, str):
            msg = err
        msg = msg or body.get("message") or body.get("detail")
    if not msg:
        msg = resp.text
    return str(msg).strip()[:ERROR_CHARS] or resp.reason_phrase


class _RemoteBase:
    kind = "remote"

    def __init__(self, base_url: str, model: str, api_key_env: str = "", timeout_s: float = 120):
        self.base_url = _base(base_url)
        if not model:
            raise BackendUnavailable(f"No model name configured for the server at {self.base_url}")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.name = f"{self.kind}:{model} @ {self.base_url}"

    def _headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}
        if _never_key(self.api_key_env):
            raise BackendUnavailable(
                f"Environment variable {self.api_key_env} is a server setting or "
                f"another service's credential, never sent as an API key"
            )
        # Read at call time so a key set after start-up (or rotated) is used.
        key = current_settings().get(self.api_key_env).strip()
        if not key:
            raise BackendUnavailable(
                f"Environment variable {self.api_key_env} (the API key for {self.base_url}) is not set"
            )
        return {"Authorization": f"Bearer {key}"}

    def _client(self) -> httpx.Client:
        # A short connect timeout so an unreachable host fails fast; the read timeout covers
        # the (possibly long) generation.
        return httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0)))

    def _post(self, client: httpx.Client, path: str, **kwargs) -> dict:
        url = f"{self.base_url}{path}"
        if not host_allowed(self.base_url):  # checked at import too; again before anything is sent
            raise BackendUnavailable(f"Refused to send a request to {self.base_url}: {host_refusal(self.base_url)}")
        try:
            resp = client.post(url, headers=self._headers(), **kwargs)
        except httpx.ConnectTimeout as e:
            raise ServerUnreachable(
                f"Could not connect to {url} within {client.timeout.connect:g} s: "
                "the model server must be running and reachable"
            ) from e
        except httpx.ConnectError as e:
            raise ServerUnreachable(
                f"Could not connect to {url} ({e}): the model server must be running and reachable"
            ) from e
        except httpx.TimeoutException as e:
            raise RuntimeError(
                f"{url} did not answer within the {self.timeout_s:g} s timeout ({type(e).__name__})"
            ) from e
        except httpx.TransportError as e:
            raise RuntimeError(f"Request to {url} failed: {type(e).__name__}: {e}") from e
        if resp.status_code >= 400:
            msg = _server_message(resp)
            # A bare 404 usually means the path is wrong, not the model.
            hint = (
                " (is the base URL right, ending in the API version such as /v1?)"
                if resp.status_code == 404 and "model" not in msg.lower()
                else ""
            )
            raise RuntimeError(f"{url} answered HTTP {resp.status_code}: {msg}{hint}")
        try:
            body = resp.json()
        except ValueError as e:
            raise RuntimeError(f"{url} answered with something that is not JSON: {resp.text[:ERROR_CHARS]!r}") from e
        if not isinstance(body, dict):
            raise RuntimeError(f"{url} answered with malformed JSON (not an object): {str(body)[:ERROR_CHARS]}")
        return body

    def _chat(self, client: httpx.Client, content, max_tokens: int, **sampling) -> str:
        # sampling: e.g. temperature, seed (services/models/llm.py); greedy unless given
        payload = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "temperature": 0,
            "max_tokens": int(max_tokens),
            **sampling,
        }
        body = self._post(client, "/chat/completions", json=payload)
        try:
            text = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as e:
            raise RuntimeError(
                f"Malformed chat completion from {self.base_url} (no choices[0].message"
                f".content): {str(body)[:ERROR_CHARS]}"
            ) from e
        if isinstance(text, list):  # some servers return content as a list of text parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        if not isinstance(text, str):
            raise RuntimeError(
                f"Malformed chat completion from {self.base_url} (message content is "
                f"{type(text).__name__}, not text): {str(body)[:ERROR_CHARS]}"
            )
        return text.strip()


class RemoteSpeechLLM(_RemoteBase):
    """A speech LLM (e.g. Voxtral) that hears the recording and follows `prompt`."""

    kind = "remote-speech-llm"

    def __init__(
        self,
        base_url: str,
        model: str,
        prompt: str,
        api_key_env: str = "",
        timeout_s: float = 120,
        max_tokens: int = 512,
    ):
        super().__init__(base_url, model, api_key_env, timeout_s)
        self.prompt = prompt
        self.max_tokens = int(max_tokens)

    def translate_audio(self, wav16k_path: str) -> str:
        # OpenAI's input_audio part: raw base64 (no data: URL prefix) plus a format literal.
        data = base64.b64encode(Path(wav16k_path).read_bytes()).decode("ascii")
        content = [
            {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
            {"type": "text", "text": self.prompt},
        ]
        with self._client() as client:
            return self._chat(client, content, self.max_tokens)


class RemoteASR(_RemoteBase):
    kind = "remote-asr"

    def __init__(self, base_url: str, model: str, api_key_env: str = "", language: str = "en", timeout_s: float = 120):
        super().__init__(base_url, model, api_key_env, timeout_s)
        self.language = language

    def transcribe(self, wav16k_path: str) -> str:
        path = Path(wav16k_path)
        fields = {"model": self.model, "response_format": "json"}
        if self.language:
            fields["language"] = self.language
        with self._client() as client:
            body = self._post(
                client,
                "/audio/transcriptions",
                data=fields,
                files={"file": (path.name, path.read_bytes(), "audio/wav")},
            )
        text = body.get("text")
        if not isinstance(text, str):
            raise RuntimeError(f"Malformed transcription from {self.base_url} (no text): {str(body)[:ERROR_CHARS]}")
        return text.strip()


class RemoteMT(_RemoteBase):
    """An instruction LLM used as MT: `prompt` holds {text}, replaced by each source text."""

    kind = "remote-mt"

    def __init__(
        self,
        base_url: str,
        model: str,
        prompt: str,
        api_key_env: str = "",
        timeout_s: float = 120,
        max_tokens: int = 512,
    ):
        super().__init__(base_url, model, api_key_env, timeout_s)
        if "{text}" not in prompt:
            raise BackendUnavailable("The remote MT prompt must contain {text} where the source text goes")
        self.prompt = prompt
        self.max_tokens = int(max_tokens)

    def translate(self, texts: list[str]) -> list[str]:
        out = []
        with self._client() as client:  # one connection kept alive across the texts
            for t in texts:
                # str.replace, not str.format: prompts may contain other braces (JSON examples).
                out.append(self._chat(client, self.prompt.replace("{text}", t), self.max_tokens) if t.strip() else "")
        return out
