"""A fake of vLLM's OpenAI-compatible server (`vllm serve`) that checks every request's shape as
vLLM's request schema does, then answers with the real offline models (tests/openai_server.py).

vLLM serves one model per process, under its name (or --served-model-name) and the names of
its --lora-modules; each is text-only or takes audio. What it checks:
- /v1/chat/completions: `model` a served name (404 otherwise, as vLLM answers); `messages` a
  list of {role, content}; content a string or a list of parts, each `text` ({"type", "text"}),
  `input_audio` ({"type", "input_audio": {"data": raw base64, "format": "wav"|"mp3"}}: no
  `data:` URL prefix) or `audio_url` ({"type", "audio_url": {"url": "data:audio/...;base64,..."}});
  audio only for a model that takes it (a text-only model refuses: "At most 0 audio(s)"), and no
  more clips than --limit-mm-per-prompt (1); sampling fields of the right type.
- /v1/audio/transcriptions: a multipart `file` and `model` (a transcription model), `language`
  an ISO 639-1 code, `response_format` one vLLM writes.
Fields vLLM does not know are refused here (vLLM ignores them with a warning: a setting the app
relies on would be silently dropped), so a passing request is one vLLM would act on in full.
"""

from __future__ import annotations

import base64
import binascii

from openai_server import ApiError, OpenAIServer

CHAT_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "n",
    "stream",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "logprobs",
    "top_logprobs",
    "response_format",
    "user",
}
ROLES = {"system", "user", "assistant", "developer", "tool"}
AUDIO_FORMATS = {"wav", "mp3"}
TRANSCRIPTION_FIELDS = {"model", "language", "prompt", "response_format", "temperature"}
RESPONSE_FORMATS = {"json", "text", "srt", "verbose_json", "vtt"}


class VLLMServer(OpenAIServer):
    """served: model name -> "text", "audio" (chat with audio parts) or "transcription"."""

    def __init__(self, served: dict[str, str], audio_per_prompt: int = 1, **kwargs):
        super().__init__(models=set(served), **kwargs)
        self.served = dict(served)
        self.audio_per_prompt = audio_per_prompt

    def _served(self, name, kinds: tuple[str, ...]) -> str:
        if not isinstance(name, str) or not name:
            raise ApiError(400, "model: field required")
        if name not in self.served:
            raise ApiError(404, f"The model `{name}` does not exist.", "NotFoundError")
        if self.served[name] not in kinds:
            raise ApiError(400, f"The model `{name}` does not support this endpoint.", "BadRequestError")
        return name

    def chat(self, body: dict) -> dict:
        unknown = set(body) - CHAT_FIELDS
        if unknown:
            raise ApiError(400, f"unknown fields: {sorted(unknown)}")
        name = self._served(body.get("model"), ("text", "audio"))
        for key, kind in (("max_tokens", int), ("max_completion_tokens", int), ("seed", int), ("n", int)):
            if key in body and (not isinstance(body[key], kind) or isinstance(body[key], bool) or body[key] < 0):
                raise ApiError(400, f"{key}: must be a non-negative integer")
        for key in ("temperature", "top_p"):
            if key in body and (not isinstance(body[key], (int, float)) or body[key] < 0):
                raise ApiError(400, f"{key}: must be a non-negative number")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ApiError(400, "messages: must be a non-empty list")
        clips = 0
        for m in messages:
            if not isinstance(m, dict) or m.get("role") not in ROLES or set(m) - {"role", "content", "name"}:
                raise ApiError(400, f"messages: not a chat message: {str(m)[:100]}")
            content = m.get("content")
            if isinstance(content, str):
                continue
            if not isinstance(content, list):
                raise ApiError(400, "content: must be a string or a list of parts")
            for part in content:
                clips += self._part(part)
        if clips > (self.audio_per_prompt if self.served[name] == "audio" else 0):
            limit = self.audio_per_prompt if self.served[name] == "audio" else 0
            raise ApiError(400, f"At most {limit} audio(s) may be provided in one prompt.")
        return super().chat(body)

    @staticmethod
    def _part(part) -> int:
        """1 for an audio part, 0 for text; ApiError for anything vLLM would refuse."""
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if set(part) != {"type", "text"} or not isinstance(part["text"], str):
                raise ApiError(400, "a text part is {'type': 'text', 'text': str}")
            return 0
        if kind == "input_audio":
            ia = part.get("input_audio")
            if set(part) != {"type", "input_audio"} or not isinstance(ia, dict) or set(ia) != {"data", "format"}:
                raise ApiError(400, "an input_audio part is {'type': 'input_audio', 'input_audio': {'data', 'format'}}")
            if ia["format"] not in AUDIO_FORMATS:
                raise ApiError(400, f"input_audio.format: must be one of {sorted(AUDIO_FORMATS)}")
            if not isinstance(ia["data"], str) or ia["data"].startswith("data:"):
                raise ApiError(400, "input_audio.data: raw base64, without a data: URL prefix")
            _b64(ia["data"])
            return 1
        if kind == "audio_url":
            url = (part.get("audio_url") or {}).get("url") if isinstance(part.get("audio_url"), dict) else None
            if not isinstance(url, str) or not url.startswith(("data:audio/", "http://", "https://", "file:")):
                raise ApiError(400, "audio_url.url: a data:audio/...;base64 URL or an http(s) URL")
            return 1
        raise ApiError(400, f"Unknown part type: {kind!r}")

    def transcription(self, form: dict, files: dict) -> dict:
        unknown = set(form) - TRANSCRIPTION_FIELDS
        if unknown:
            raise ApiError(400, f"unknown fields: {sorted(unknown)}")
        self._served(form.get("model"), ("transcription",))
        lang = form.get("language")
        if lang is not None and not (len(lang) == 2 and lang.isalpha() and lang.islower()):
            raise ApiError(400, f"language: {lang!r} is not an ISO 639-1 code")
        if form.get("response_format", "json") not in RESPONSE_FORMATS:
            raise ApiError(400, f"response_format: must be one of {sorted(RESPONSE_FORMATS)}")
        return super().transcription(form, files)


def _b64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ApiError(400, f"input_audio.data is not base64: {e}") from e
