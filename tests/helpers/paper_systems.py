"""The demo study with one more system, and a recording routed to it (paper systems' tests)."""

from __future__ import annotations

import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

from harness.demo import DEMO_ASSETS  # noqa: E402
from services.setup.importer import import_study  # noqa: E402
from services.usability.audio_intake import store_recording  # noqa: E402
from storage.usability import recordings  # noqa: E402


def study_with(database, tmp_path, system_id: str, params: dict, kind: str = "cascade") -> None:
    """The demo study with one more system (not assigned: a test routes an exchange to it)."""
    folder = tmp_path / "study"
    shutil.copytree(DEMO_ASSETS, folder)
    toml = folder / "study.toml"
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in params.items())
    block = f'\n[[systems]]\nid = "{system_id}"\nkind = "{kind}"\nassign = false\n[systems.params]\n{lines}\n'
    text = toml.read_text(encoding="utf-8")
    assert "\n[da]\n" in text
    toml.write_text(text.replace("\n[da]\n", block + "\n[da]\n", 1), encoding="utf-8")
    import_study(database, folder)


def record_for(database, system_id: str, wav: Path, media: Path) -> tuple[int, int]:
    """A recording of `wav` stored for the study's first exchange, routed to system_id."""
    db = database
    ex_id = db.scalar("SELECT MIN(id) FROM exchanges WHERE study_id = 'demo'")
    with db.write() as w:
        w.execute("UPDATE exchanges SET system_id = ? WHERE id = ?", [system_id, ex_id])
        # an assignment of a sender for the record phase (the demo's exchanges have none yet)
        a = w.execute("SELECT id FROM assignments WHERE exchange_id = ? AND phase = 'record'", [ex_id]).fetchone()
        st = store_recording(wav, media, 60)
        rid = recordings.insert_recording(
            w, a[0] if a else None, ex_id, st.sha256, st.path_original, st.path_16k, st.duration_s
        )
    return ex_id, rid
