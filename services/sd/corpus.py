"""The semantic differential's corpus files, read and checked into the StudyBundle at import
(Protocol.load of services/sd/protocol.py), with services/study/files.py's shared helpers."""

from __future__ import annotations

from services.study import files

# each file's (required, optional) columns
COLUMNS = {
    "sentences": (["sentence_id", "text"], ["source"]),
    "pairs": (["pair_id", "language", "positive", "negative"], ["note"]),
}


def load(folder, cfg, systems, bundle, err) -> None:
    """The [sd] section's sentences and adjective pairs (Protocol.load)."""
    sd = cfg["sd"]
    spath = files.safe_file(folder, sd["sentences"], "sd.sentences", err)
    ppath = files.safe_file(folder, sd["pairs"], "sd.pairs", err)
    if spath:
        name, seen = spath.name, set()
        for rowno, row in files.read_rows(spath, COLUMNS["sentences"], err):
            if not files.require_text(err, name, rowno, row, "sentence_id", "text"):
                continue
            if row["sentence_id"] in seen:
                err.add(name, rowno, "sentence_id", f"duplicate sentence id '{row['sentence_id']}'")
                continue
            seen.add(row["sentence_id"])
            bundle.sd_sentences.append(
                {"id": row["sentence_id"], "text": row["text"], "source": row.get("source") or None}
            )
        k = sd.get("sentences_per_participant")
        if isinstance(k, int) and bundle.sd_sentences and k > len(bundle.sd_sentences):
            err.add(
                "study.toml",
                None,
                "sd.sentences_per_participant",
                f"{k} sentences per participant but only {len(bundle.sd_sentences)} sentences",
            )
    if ppath:
        name, seen = ppath.name, set()
        for rowno, row in files.read_rows(ppath, COLUMNS["pairs"], err):
            if not files.require_text(err, name, rowno, row, "pair_id", "language", "positive", "negative"):
                continue
            key = (row["pair_id"], row["language"])
            if key in seen:
                err.add(name, rowno, "pair_id", f"duplicate pair '{key[0]}' for language '{key[1]}'")
                continue
            seen.add(key)
            bundle.sd_pairs.append(
                {
                    "id": row["pair_id"],
                    "language": row["language"],
                    "positive": row["positive"],
                    "negative": row["negative"],
                    "note": row.get("note") or None,
                }
            )
        if not any(p["language"] == sd.get("language") for p in bundle.sd_pairs):
            err.add(name, None, "language", f"no adjective pairs in language '{sd.get('language')}' (sd.language)")
