"""Writing media files (recordings, synthesised audio, rendered images) safely."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(target: Path, data: bytes) -> Path:
    """A unique temp file in the same folder, then an atomic replace: a concurrent reader never
    sees a half-written file, and concurrent writers of the same content-named file agree."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    try:
        os.fchmod(fd, 0o600)  # the app's user only: recordings are personal data
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
