"""The bundled demo reads like paper 000's study (issue 18, point 8): its starters are the cleaned
kind the sender's instruction asks for (no fillers, repetitions or disfluencies: the paper
stripped them from the natural transcripts with an LLM), 40-60 words, and the sender sees every
key information span in bold, the natural-style starters included."""

from __future__ import annotations

import html
import re

from harness.demo import DEMO_ASSETS
from services.participation.items import bold_key_spans, get_view
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import load_study
from services.study.texts import texts
from storage.usability import corpus as usability_corpus

# filled pauses and discourse fillers of speech; "so" / "right" / "well" only as a clause opener
FILLERS_EN = re.compile(
    r"\b(?:um+|uh+|erm?|hmm+|ah|oh|yeah|you know|I mean|like,)\b|\blike (?:under|about|around)\b|"
    r"(?:^|[.?!,]\s+)(?:so|right|well|okay|anyway),",
    re.I,
)
FILLERS_PT = re.compile(r"\b(?:hum+|hmm+|ah|eh|pá|tipo|então|bem),", re.I)
REPEATED = re.compile(r"\b(\w+)\b[,\s]+(?:\w+\s+)?\1\b", re.I)  # "Fitzgerald, Claire Fitzgerald", "the the"


def test_starters_are_clean_and_within_the_word_limits():
    bundle = load_study(DEMO_ASSETS)
    lo, hi = bundle.config["usability"]["starter_words"]
    assert (lo, hi) == (40, 60)
    assert {s["source"] for s in bundle.corpus["usability"]["starters"]} == {"natural", "synthetic"}
    for s in bundle.corpus["usability"]["starters"]:
        assert lo <= len(s["text"].split()) <= hi, s["id"]
        assert not FILLERS_EN.search(s["text"]), (s["id"], FILLERS_EN.search(s["text"]).group(0))
        assert not REPEATED.search(s["text"]), (s["id"], REPEATED.search(s["text"]).group(0))
    for r in bundle.corpus["usability"]["references"]:
        assert not FILLERS_PT.search(r["translation"]), (r["starter_id"], FILLERS_PT.search(r["translation"]).group(0))
    # the sender is told to read without fillers: the text they read has none to drop
    assert "without pauses or fillers" in texts({"config": bundle.config})["record"]["instruction"]


def _bold_parts(shown: str) -> list[str]:
    return [html.unescape(b) for b in re.findall(r"<strong>(.*?)</strong>", shown)]


def test_the_sender_sees_every_key_span_in_bold(database, tmp_path):
    import_study(database, DEMO_ASSETS)
    starters = usability_corpus.starters(database, "demo")
    assert sum(s["source"] == "natural" for s in starters) == 6
    for s in starters:
        shown = bold_key_spans(s["text"], s["key_spans"])
        bold = " ".join(_bold_parts(shown))
        assert all(span in bold for span in s["key_spans"]), s["id"]
        assert html.unescape(re.sub(r"</?strong>", "", shown)) == s["text"]  # the whole text, escaped
    # the record page shows the sender's starter that way
    sender = add_participants(database, "demo", "sender", 1, "USW", "Man")[0]
    v = get_view(database, sender.token, "record", media_dir=tmp_path)
    ex = database.one("SELECT starter_id FROM exchanges WHERE id = ?", [int(v.item_id)])
    st = usability_corpus.starter(database, "demo", ex["starter_id"])
    assert v.content["starter_html"] == bold_key_spans(st["text"], st["key_spans"])
    assert all(span in " ".join(_bold_parts(v.content["starter_html"])) for span in st["key_spans"])
