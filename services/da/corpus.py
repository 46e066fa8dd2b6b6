"""Direct assessment's corpus file, read and checked into the StudyBundle at import
(Protocol.load of services/da/protocol.py), with services/study/files.py's shared helpers."""

from __future__ import annotations

from services.study import files

# the segments file's (required, optional) columns
COLUMNS = (["segment_id", "doc_id", "position", "source", "reference", "system", "output"], ["domain"])


def load(folder, cfg, systems, bundle, err) -> None:
    """The [da] section's segments file (Protocol.load): one row per segment and system."""
    path = files.safe_file(folder, cfg["da"]["segments"], "da.segments", err)
    if not path:
        return
    name = path.name
    seen = set()
    for rowno, row in files.read_rows(path, COLUMNS, err):
        if not files.require_text(err, name, rowno, row, *COLUMNS[0]):
            continue
        pos = files.whole_number(err, name, rowno, "position", row["position"], 0)
        if pos is None:
            continue
        key = (row["segment_id"], row["system"])
        if key in seen:
            err.add(name, rowno, None, f"duplicate output of system '{key[1]}' for segment '{key[0]}'")
            continue
        seen.add(key)
        bundle.da_segments.append({**row, "position": pos})
    if not bundle.da_segments and not any(e.file == name for e in err.errors):
        err.add(name, None, None, "has no segments")
