"""A corpus' audio files at import, for any protocol whose study file names audio (ESA's and MQM's
segments, the listening test's stimuli, side by side's outputs): each file checked inside the study
folder, decoded with the project's decoder (services/common/audio_decode.py) and bounded in length,
then copied into the media folder under a name made of its content (sha256), as recordings are.
A problem is filed under the corpus file's row and column."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from services.common import audio_decode
from services.common.media_files import atomic_write
from services.study import files


@dataclass(frozen=True)
class AudioFile:
    """A corpus audio file checked at import: its name in the media folder (content-addressed) and
    the study folder's file it is copied from. Its str() is its name, so the corpus' hash (services/
    study/lifecycle.py) depends on the audio's content, not on where the study folder was."""

    name: str
    src: Path

    def __str__(self) -> str:
        return self.name


class AtRow(files._Collector):
    """A collector that files every problem under one row and column of a corpus file (safe_file
    names study.toml otherwise)."""

    def __init__(self, err, file: str, row: int, column: str):
        super().__init__()
        self.err, self.file, self.row, self.column = err, file, row, column

    def add(self, file, row, fld, message) -> None:
        self.err.add(self.file, self.row, self.column, message)


def read_audio(
    folder: Path, value: str, err, file: str, row: int, column: str, *, media_folder: str, max_s: float, what: str
) -> tuple[AudioFile, float] | None:
    """A row's audio file: inside the study folder (files.safe_file), decoded and at most max_s
    long; (the file, named under media_folder by its content, and its duration in seconds), or None
    with the problem filed under the row and column. what: the unit the limit is for ("a segment")."""
    at = AtRow(err, file, row, column)
    path = files.safe_file(folder, value, column, at)
    if path is None:
        return None
    if not path.is_file():
        at.add(file, row, column, f"'{value}' is not in the study folder")
        return None
    data = path.read_bytes()
    try:
        samples, rate, fmt = audio_decode.decode(data, max_s)
    except audio_decode.IntakeError as e:
        if "too long" in str(e):  # the decoder stops one frame past the cap (audio_decode.too_long)
            at.add(file, row, column, f"'{value}' is too long (more than {max_s:g} s; at most that {what})")
        else:
            at.add(file, row, column, f"'{value}' is not audio the server can read ({e})")
        return None
    duration = len(samples) / rate if rate else 0.0
    if duration <= 0:
        at.add(file, row, column, f"'{value}' holds no sound (0 s)")
        return None
    if duration > max_s:
        at.add(file, row, column, f"'{value}' is too long ({duration:.1f} s; at most {max_s:g} s {what})")
        return None
    digest = hashlib.sha256(data).hexdigest()
    return AudioFile(f"{media_folder}/{digest}.{fmt}", path), round(duration, 3)


def copy_media(media: Iterable[AudioFile], media_dir: Path) -> None:
    """The corpus' audio into the media folder under its content name (a file already there is the
    same bytes)."""
    for audio in media:
        target = Path(media_dir) / audio.name
        if not target.exists():
            atomic_write(target, audio.src.read_bytes())
