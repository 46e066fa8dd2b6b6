"""The side-by-side protocol's corpus and its assignment plan (docs/side-by-side.md).

The [sxs] section's corpus file has one row per system's output of a source: item_id, source,
system, output, and optionally reference and doc_id. The rows of one item_id are one item (one
screen): its source, its reference and its outputs, one per system.

Assignment (Protocol.store_corpus and the role's setup): the items are shuffled once by the
study's seed into a sequence; the k-th annotator enrolled holds the sequence's slots
k*ipa .. k*ipa+ipa-1 read cyclically (ipa: items_per_annotator), slot s being item seq[s mod n]
in its round s div n. Reading the sequence cyclically hands out next the items held by the fewest
annotators (ties: the seeded order), so after r annotators every item is held by floor or ceil of
r*ipa/n; slots from n*annotators_per_item on are never handed out, so no item gets more than
annotators_per_item annotators. An item's outputs are shown in its seeded base order rotated by
the round (a Latin square's rows): across the annotators of an item each system takes each
position equally often, within one when their number is not a multiple of the outputs'."""

from __future__ import annotations

from services.common import settings
from services.common.seeded import seeded_rng
from services.study import corpus_audio, files
from services.study.corpus_audio import copy_media
from storage import protocol_rows
from storage.db import Transaction

NAME = "sxs"
ITEMS, OUTPUTS, TAKERS, ANSWERS, RATINGS = (f"{NAME}_{t}" for t in ("items", "outputs", "takers", "answers", "ratings"))
VACANCIES = f"{NAME}_vacancies"
# the corpus file's (required, optional) columns; `audio`: the output as a recording (a TTS or ST
# system's), played on the page beside its text (the text may then be empty)
COLUMNS = (["item_id", "source", "system"], ["output", "reference", "doc_id", "audio"])
MODES = ("score", "prefer", "rank", "abx")
MEDIA_FOLDER = "sxs"  # the outputs' audio in the media folder, named by content
MAX_AUDIO_S = 120.0  # an output's recording, at most (seconds)
RANKINGS = ("order", "best_worst")


def least(mode: str, ranking: str) -> int:
    """The fewest outputs an item needs: three for a best-worst choice (with two it is a
    preference), two otherwise."""
    return 3 if mode == "rank" and ranking == "best_worst" else 2


def load(folder, cfg, systems, bundle, err) -> None:
    """The corpus file read and checked: every field named, an item's outputs counted against
    the mode (prefer: exactly two; rank by best-worst: three or more; else two or more)."""
    section = cfg[NAME]
    path = files.safe_file(folder, section["corpus"], f"{NAME}.corpus", err)
    if not path:
        return
    name = path.name
    items: dict[str, dict] = {}
    media: dict[str, corpus_audio.AudioFile] = {}
    for rowno, row in files.read_rows(path, COLUMNS, err):
        if not files.require_text(err, name, rowno, row, *COLUMNS[0]):
            continue
        audio, seconds = "", 0.0
        if row.get("audio"):
            found = corpus_audio.read_audio(
                folder, row["audio"], err, name, rowno, "audio", media_folder=MEDIA_FOLDER, max_s=MAX_AUDIO_S,
                what="an output",
            )  # fmt: skip
            if found is None:
                continue
            media[found[0].name] = found[0]
            audio, seconds = found[0].name, found[1]
        elif not (row.get("output") or "").strip():
            err.add(name, rowno, "output", "must not be empty: an output needs its text, or its recording (audio)")
            continue
        item = items.setdefault(
            row["item_id"],
            {
                "item_id": row["item_id"],
                "source": row["source"].replace("\r\n", "\n"),
                "reference": row.get("reference", "").replace("\r\n", "\n"),
                "doc_id": row.get("doc_id", ""),
                "outputs": [],
                "row": rowno,
            },
        )
        if row["source"].replace("\r\n", "\n") != item["source"]:
            err.add(name, rowno, "source", f"item '{row['item_id']}' has another source on row {item['row']}")
            continue
        if any(o["system"] == row["system"] for o in item["outputs"]):
            err.add(name, rowno, "system", f"a second output of system '{row['system']}' for item '{row['item_id']}'")
            continue
        text = (row.get("output") or "").replace("\r\n", "\n")
        item["outputs"].append({"system": row["system"], "output": text, "audio": audio, "audio_s": seconds})
    mode, ranking = section.get("mode"), section.get("ranking")
    fewest = least(str(mode), str(ranking))
    for item in items.values():
        n = len(item["outputs"])
        if mode in ("prefer", "abx") and n != 2:
            err.add(name, item["row"], "system", f"item '{item['item_id']}' has {n} outputs: mode {mode} needs two")
        elif mode == "abx" and not all(o["audio"] for o in item["outputs"]):
            err.add(name, item["row"], "audio", f"item '{item['item_id']}': mode abx needs each output's recording")
        elif n < fewest:
            err.add(name, item["row"], "system", f"item '{item['item_id']}' has {n} output(s): needs {fewest} or more")
    if not items and not any(e.file == name for e in err.errors):
        err.add(name, None, None, "has no items")
    bundle.corpus[NAME] = {
        "items": [{k: v for k, v in i.items() if k != "row"} for i in items.values()],
        "media": sorted(media.values(), key=str),
    }


def prepare(bundle) -> None:
    """The assignment's sequence and each item's base order of its systems, from the study's seed
    (the corpus part holds them: a changed seed is a changed corpus)."""
    corpus = bundle.corpus.get(NAME)
    if corpus is None:
        return
    seed = bundle.config["study"]["seed"]
    seq = list(range(len(corpus["items"])))
    seeded_rng(NAME, "sequence", seed).shuffle(seq)
    corpus["sequence"] = seq
    for item in corpus["items"]:
        base = [o["system"] for o in item["outputs"]]
        seeded_rng(NAME, "order", seed, item["item_id"]).shuffle(base)
        item["base"] = base


def store(tx: Transaction, study_id: str, corpus) -> None:
    """The items (each with its place in the sequence) and their outputs (each with its place in
    the item's base order)."""
    if not corpus:
        return
    copy_media(corpus.get("media") or [], settings.current().media_dir)
    items, seq = corpus["items"], corpus["sequence"]
    place = {item: s for s, item in enumerate(seq)}
    protocol_rows.insert_many(
        tx.db,
        ITEMS,
        [
            {
                "study_id": study_id,
                "item": i,
                "seq": place[i],
                "item_id": it["item_id"],
                "doc_id": it["doc_id"],
                "source": it["source"],
                "reference": it["reference"],
                "n_outputs": len(it["outputs"]),
            }
            for i, it in enumerate(items)
        ],
    )
    protocol_rows.insert_many(
        tx.db,
        OUTPUTS,
        [
            {
                "study_id": study_id,
                "item": i,
                "system": o["system"],
                "output": o["output"],
                "audio": o.get("audio", ""),
                "audio_s": o.get("audio_s", 0.0),
                "base": it["base"].index(o["system"]),
            }
            for i, it in enumerate(items)
            for o in it["outputs"]
        ],
    )


def count(database, study_id: str) -> dict[str, int]:
    """The import summary's counts: the items (screens) and the outputs."""
    return {
        ITEMS: protocol_rows.count(database, ITEMS, {"study_id": study_id}),
        OUTPUTS: protocol_rows.count(database, OUTPUTS, {"study_id": study_id}),
    }


# -- the plan ----------------------------------------------------------------------------------


def shown_order(base: list[str], round_: int) -> list[str]:
    """The item's systems as its annotator in `round_` sees them: the base order rotated."""
    r = round_ % len(base)
    return base[r:] + base[:r]
