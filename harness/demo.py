"""The demo study as most tests and benchmarks use it: its human translations imported as
exchanges of a listed human system, so receivers and validators have work at once."""

from __future__ import annotations

import atexit
import csv
import shutil
import tempfile
from pathlib import Path

from harness.app import ROOT

# The bundled demo study (assets/demo_study): its human translations are references
# (references.csv), so its receivers only ever get real senders' recordings.
DEMO_ASSETS = ROOT / "assets" / "demo_study"


HUMAN_SYSTEM = """
[[systems]]
id = "human-reference"
label = "Human reference translation (demo content)"
kind = "human"
assign = false
"""


def demo_with_exchanges(dest: Path, keep_references: bool = False) -> Path:
    """A copy of the demo study at dest (study id "demo") whose 12 human translations are
    imported exchanges of a listed `human` system "human-reference" (exchanges.csv), as a
    designer who lists human translation as a system would have it: receivers and validators
    have work before any sender has recorded. Without keep_references the translations are
    only that (no references.csv), as the demo was before references had a file of their own."""
    shutil.copytree(DEMO_ASSETS, dest)
    with open(dest / "references.csv", encoding="utf-8", newline="") as f:
        refs = list(csv.DictReader(f))
    with open(dest / "exchanges.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["starter_id", "system", "translation"])
        w.writerows([r["starter_id"], "human-reference", r["translation"]] for r in refs)
    toml = (dest / "study.toml").read_text(encoding="utf-8")
    key = 'references = "references.csv"\n'
    assert key in toml and "\n[da]\n" in toml, "assets/demo_study/study.toml changed: update demo_with_exchanges"
    exchanges = 'exchanges = "exchanges.csv"\n'
    toml = toml.replace(key, exchanges + key if keep_references else exchanges)
    toml = toml.replace("\n[da]\n", HUMAN_SYSTEM + "\n[da]\n", 1)
    # a rater takes a whole sender's share (the paper's): the demo's 2 is for playing it alone
    toml = toml.replace("\nitems_per_rater = 2\n", "\n", 1)
    (dest / "study.toml").write_text(toml, encoding="utf-8")
    if not keep_references:
        (dest / "references.csv").unlink()
    return dest


# DEMO: the demo study with pre-translated exchanges, which most tests build on (a receiver or
# validator with work at once); made once per process, removed at exit.
_DEMO_TMP = Path(tempfile.mkdtemp(prefix="tradlab-test-demo-"))
atexit.register(shutil.rmtree, _DEMO_TMP, True)
DEMO = demo_with_exchanges(_DEMO_TMP / "demo_study")
