"""python app.py export: tidy tables, data dictionary, pseudonyms, no tokens or external ids,
the consent rule, CSV formula neutralising, format round trips, the hf-audio folder, the CLI."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from harness.demo import DEMO_ASSETS
from services.setup.enrolment import add_participants
from services.study import export as export_service
from services.study import export_dictionary as dictionary
from services.study.export import ExportError, export_study, export_zip, neutralise
from tests.helpers.app import run_cli
from tests.helpers.export import (
    EXCLUSION_REASON,
    FORMULAS,
    METADATA,
    S2_TRANSCRIPT,
    S2_TRANSLATION,
    export,
    exported_study,
)

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

EXPECTED = {
    "participants": [
        "participant",
        "role",
        "group",
        "gender",
        "design_index",
        "status",
        "dropped_out_at",
        "dropped_out_reason",
        "excluded_at",
        "excluded_reason",
        "self_enrolled",
        "created_at",
        "claimed_at",
        "last_seen_at",
        "completed_at",
    ],
    "consents": ["participant", "agreed", "text_hash", "created_at"],
    "demographics": ["participant", "field", "value", "created_at"],
    "assignments": [
        "assignment_id",
        "participant",
        "phase",
        "item_id",
        "exchange_id",
        "position",
        "status",
        "meta",
        "created_at",
        "first_shown_at",
        "submitted_at",
        "active_seconds",
    ],
    "exchanges": [
        "exchange_id",
        "starter_id",
        "system",
        "sender",
        "origin",
        "created_at",
        "translation",
        "target_variant",
        "translation_transcript",
        "translation_meta",
        "translated_at",
    ],
    "recordings": [
        "recording_id",
        "exchange_id",
        "sender",
        "file_name",
        "duration_s",
        "qc_result",
        "review_decision",
        "reviewed_at",
        "review_reason",
        "qc_transcript",
        "wer",
        "qc_flags",
        "created_at",
    ],
    "answers": [
        "answer_id",
        "answer_set",
        "exchange_id",
        "receiver",
        "question_idx",
        "text",
        "unanswerable",
        "repeat_starter",
        "created_at",
    ],
    "validations": [
        "validation_id",
        "assignment_id",
        "exchange_id",
        "validator",
        "answer_set",
        "receiver",
        "translation_score",
        "qa_score",
        "created_at",
    ],
    "validation_marks": ["validation_id", "exchange_id", "question_idx", "correct"],
    "surveys": [
        "survey_id",
        "assignment_id",
        "exchange_id",
        "respondent",
        "stage",
        "perspective",
        "satisfaction",
        "trust",
        "reliance",
        "created_at",
    ],
    "exchange_metrics": ["exchange_id", "metric", "version", "model", "score", "created_at"],
    "da_judgments": [
        "judgment_id",
        "assignment_id",
        "rater",
        "hit",
        "run",
        "pos",
        "item_type",
        "of_pos",
        "modality",
        "segment_id",
        "system",
        "doc_id",
        "score",
        "first_shown_at",
        "submitted_at",
        "active_seconds",
        "created_at",
        "tts_engine",
        "tts_voice",
    ],
    "da_feedback": ["participant", "text", "updated_at"],
    "sd_ratings": [
        "assignment_id",
        "participant",
        "sentence_id",
        "page",
        "pair_id",
        "is_repeat",
        "value",
        "positive_left",
        "created_at",
    ],
    "sd_suitability": ["assignment_id", "participant", "pair_id", "suitability", "created_at"],
    "sd_suggestions": ["assignment_id", "participant", "text", "created_at"],
    "systems": ["system", "label", "kind", "target_variant"],
    "starters": ["starter_id", "domain", "source", "corpus", "text", "key_spans"],
    "reference_translations": ["starter_id", "reference_idx", "translator", "translation"],
    "questions": ["starter_id", "question_idx", "en", "pt"],
    "question_drafts": [
        "draft_id",
        "starter_id",
        "position",
        "en",
        "pt",
        "answer_en",
        "status",
        "origin",
        "model",
        "created_at",
        "updated_at",
    ],
    "da_segments": ["segment_id", "system", "doc_id", "position", "source", "reference", "output", "domain"],
    "da_hit_items": ["hit", "pos", "item_type", "of_pos", "segment_id", "system", "candidate"],
    "sd_sentences": ["sentence_id", "text", "source"],
    "sd_pairs": ["pair_id", "language", "positive", "negative", "note"],
    "events": ["event_id", "ts", "actor_kind", "actor", "action", "entity", "entity_id", "detail"],
}
EXTERNAL = ["external_id", "prolific_pid", "prolific_study_id", "prolific_session_id"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The demo study with a little of everything, exported by the tests (tests/helpers/export.py)."""
    return exported_study(tmp_path_factory.mktemp("export"))


def read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def all_bytes(folder: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


# -- columns and the data dictionary -----------------------------------------------------------


def test_every_table_has_its_expected_columns_all_documented(study):
    res = export(study, "csv")
    assert set(res.rows) == set(EXPECTED)
    readme = (res.folder / "README.md").read_text()
    for table, cols in EXPECTED.items():
        with open(res.folder / f"{table}.csv", encoding="utf-8", newline="") as f:
            assert next(csv.reader(f)) == cols, table
        assert dictionary.columns(table) == cols
        section = readme.split(f"### `{table}.csv`", 1)[1].split("### ", 1)[0]
        for c in cols:
            assert c in dictionary.table_entry(table)[1]
            assert f"| `{c}` | {dictionary.column_type(table, c)} |" in section, (table, c)
    documented = [dictionary.table_entry(t)[1] for t in [*EXPECTED, "metadata"]]
    assert set(dictionary.TYPES) >= {t for cols in documented for t, _ in cols.values()}
    # every usability / DA / SD table got rows from the fixture
    for table in (
        "participants",
        "exchanges",
        "recordings",
        "answers",
        "validations",
        "validation_marks",
        "surveys",
        "exchange_metrics",
        "da_judgments",
        "da_feedback",
        "sd_ratings",
        "events",
        "reference_translations",
    ):
        assert res.rows[table] > 0, table
    # the Portuguese variant: the senders' exchanges went through Bergamot (pt-BR); the imported
    # human translations name none; the study targets the paper's pt-PT
    variant = {int(r["exchange_id"]): r["target_variant"] for r in read_csv(res.folder / "exchanges.csv")}
    assert variant[study["s1"]["exchange"]] == variant[study["s2"]["exchange"]] == "pt-BR"
    assert set(variant.values()) == {"pt-BR", ""}
    assert json.loads((res.folder / "manifest.json").read_text())["target_variant"] == "pt-PT"


def test_each_protocol_owns_its_tables_and_the_study_package_only_the_common_ones():
    """A protocol's tables are its spec's (services/<protocol>/export_tables.py); the export's own
    dictionary holds only the tables no protocol has, and lists them in the README's order."""
    from services.common import protocols

    owner = {t: p.name for p in protocols.protocols() for t in p.export_tables}
    assert set(dictionary.TABLES) == {"participants", "consents", "demographics", "assignments", "events"}
    assert [p.name for p in protocols.protocols() if p.audio_metadata] == ["usability"]  # hf-audio's metadata
    assert not set(dictionary.TABLES) & set(owner)
    # the demo study lists every protocol but ESA, MQM, side by side and the listening test (their
    # tables: tests/test_esa_protocol.py, tests/test_mqm_protocol.py, tests/test_sxs_protocol.py,
    # tests/test_listening_protocol.py; ESA-AI's esa_prefill: tests/test_esa_prefill.py; esa_qc and
    # mqm_qc: tests/test_esa_quality.py)
    esa = {"esa_answers", "esa_segments", "esa_prefill", "esa_qc", "mqm_answers", "mqm_segments", "mqm_qc"}
    esa |= {"sxs_answers", "sxs_ratings", "sxs_outputs"}
    esa |= {"listening_answers", "listening_outcomes", "listening_scores", "listening_stimuli"}
    assert {t for t, p in owner.items() if p in ("esa", "mqm", "sxs", "listening")} == esa
    assert {t for t in EXPECTED if t not in dictionary.TABLES} == set(owner) - esa
    assert owner["recordings"] == owner["starters"] == "usability"
    assert owner["da_judgments"] == owner["da_segments"] == "da" and owner["sd_pairs"] == "sd"
    # data tables of every protocol, then every protocol's study content, the events last
    queries = list(export_service.queries())
    assert queries.index("esa_answers") < queries.index("systems") < queries.index("esa_segments") < len(queries) - 1
    assert queries.index("mqm_answers") < queries.index("systems") < queries.index("mqm_segments") < len(queries) - 1
    assert [t for t in queries if t not in esa] == list(EXPECTED)


def test_references_are_their_own_table_and_in_no_other(tmp_path):
    """The bundled demo: its human translations are references, exported as reference_translations
    and nowhere else (no exchange, no system, no item)."""
    from services.setup.importer import import_study
    from storage import open_database

    db = open_database(tmp_path / "refs.db")
    import_study(db, DEMO_ASSETS)
    res = export_study(db, "demo", tmp_path / "out", "csv", media_dir=tmp_path / "media")
    with open(DEMO_ASSETS / "references.csv", encoding="utf-8", newline="") as f:
        given = list(csv.DictReader(f))
    rows = read_csv(res.folder / "reference_translations.csv")
    assert [(r["starter_id"], r["reference_idx"], r["translator"], r["translation"]) for r in rows] == [
        (g["starter_id"], "1", "", g["translation"]) for g in given
    ]
    assert res.rows["exchanges"] == 0 and res.rows["assignments"] == 0
    assert {r["kind"] for r in read_csv(res.folder / "systems.csv")} == {"cascade"}
    others = b"\n".join(
        p.read_bytes() for p in sorted(res.folder.glob("*.csv")) if p.name != "reference_translations.csv"
    )
    for g in given:
        assert g["translation"].encode() not in others, g["starter_id"]
    assert "### `reference_translations.csv`" in (res.folder / "README.md").read_text()
    # no recordings yet: the audiofolder is refused with its reason, and no folder is left behind
    with pytest.raises(ExportError, match="the study has no recordings to export"):
        export_study(db, "demo", tmp_path / "hf", "hf-audio", media_dir=tmp_path / "media")
    assert not (tmp_path / "hf").exists()


def test_external_ids_only_on_request_and_tokens_never(study):
    plain = export(study, "jsonl")
    head = read_jsonl(plain.folder / "participants.jsonl")[0]
    assert list(head) == EXPECTED["participants"]
    data = all_bytes(plain.folder)
    for secret in study["tokens"] + study["externals"] + ["reviewer-host"]:
        assert secret.encode() not in data, secret
    with_ids = export(study, "csv", include_external_ids=True)
    rows = read_csv(with_ids.folder / "participants.csv")
    assert list(rows[0]) == EXPECTED["participants"] + EXTERNAL
    assert {r["prolific_pid"] for r in rows} >= {"PROLIFICPID0123456789"}
    assert {r["external_id"] for r in rows} >= {"EXT-SENDER-1"}
    readme = (with_ids.folder / "README.md").read_text()
    assert "external ids INCLUDED" in readme and "| `prolific_pid` | string |" in readme
    data = all_bytes(with_ids.folder)
    for token in study["tokens"]:
        assert token.encode() not in data
    # the external ids are in participants.csv only, never in the events
    assert b"PSESSION0123456789" not in (with_ids.folder / "events.csv").read_bytes()


def test_every_format_is_free_of_tokens_and_external_ids(study):
    secrets = study["tokens"] + study["externals"] + ["reviewer-host"]
    folders = {fmt: export(study, fmt).folder for fmt in ("csv", "parquet", "hf-audio")}
    for fmt, folder in folders.items():
        data = all_bytes(folder)
        for secret in secrets:
            assert secret.encode() not in data, (fmt, secret)
    # parquet pages may be compressed: look at the decoded cells too
    for path in folders["parquet"].glob("*.parquet"):
        cells = " ".join(str(v) for v in pd.read_parquet(path).to_numpy().ravel())
        assert not [s for s in secrets if s in cells], path


# -- pseudonyms --------------------------------------------------------------------------------


def test_pseudonyms_are_stable_across_exports(study):
    first = read_csv(export(study, "csv").folder / "participants.csv")
    add_participants(study["db"], "demo", "receiver", 1)  # a newcomer between two exports
    second = read_csv(export(study, "csv").folder / "participants.csv")
    before = {r["participant"]: r["role"] for r in first}
    after = {r["participant"]: r["role"] for r in second}
    assert before.items() <= after.items() and len(after) == len(before) + 1
    assert sorted(before) == [
        "da-001",
        "rater-001",
        "receiver-001",
        "receiver-002",
        "sd-001",
        "sender-001",
        "sender-002",
        "validator-001",
    ]
    recs = {r["recording_id"]: r["sender"] for r in read_csv(export(study, "csv").folder / "recordings.csv")}
    assert recs == {str(study["s1"]["recording"]): "sender-001", str(study["s2"]["recording"]): "sender-002"}
    status = {r["participant"]: (r["status"], r["self_enrolled"]) for r in second}
    assert status["receiver-002"] == ("excluded", "0") and status["sender-002"] == ("active", "1")


def test_events_are_pseudonymised(study):
    events = read_csv(export(study, "csv").folder / "events.csv")
    enrol_ev = next(e for e in events if e["action"] == "enrol")
    assert (enrol_ev["actor_kind"], enrol_ev["actor"], enrol_ev["entity_id"]) == (
        "participant",
        "sender-002",
        "sender-002",
    )
    assert enrol_ev["detail"] == ""  # Prolific study and session ids dropped
    review = next(e for e in events if e["action"] == "review")
    assert (review["actor_kind"], review["actor"], json.loads(review["detail"])) == (
        "admin",
        "",
        {"decision": "accepted"},
    )
    submits = [e for e in events if e["action"] == "submit"]
    assert submits and all(e["actor_kind"] == "participant" and e["actor"] for e in submits)
    assert not [e for e in events if e["entity"] == "jobs"]


# -- consent: one function decides who is exported ---------------------------------------------


def test_a_participant_left_out_is_gone_from_every_table_and_the_audio(study, monkeypatch):
    full = export(study, "csv")
    s2 = study["s2"]
    assert S2_TRANSCRIPT.encode() in all_bytes(full.folder)
    real = export_service.exportable_participants
    monkeypatch.setattr(
        export_service, "exportable_participants", lambda database, sid: real(database, sid) - {s2["id"]}
    )
    for fmt in ("csv", "hf-audio"):
        res = export(study, fmt)
        data = all_bytes(res.folder)
        assert b"sender-002" not in data and S2_TRANSCRIPT.encode() not in data and S2_TRANSLATION.encode() not in data
        ext = "csv" if fmt == "csv" else "jsonl"
        folder = res.folder if fmt == "csv" else res.folder / "tables"
        load = read_csv if fmt == "csv" else read_jsonl
        for table in EXPECTED:
            for row in load(folder / f"{table}.{ext}"):
                if "exchange_id" in row and row["exchange_id"] not in (None, ""):
                    assert int(row["exchange_id"]) != s2["exchange"], table
        audio = sorted(p.name for p in (res.folder / ("audio" if fmt == "csv" else "train/audio")).iterdir())
        assert audio == [f"sender-001-ex{study['s1']['exchange']}-rec{study['s1']['recording']}.wav"]
    # sender-001 keeps its label: the numbering counts everyone
    assert "sender-001" in {r["participant"] for r in read_csv(export(study, "csv").folder / "participants.csv")}


# -- CSV formula neutralising -----------------------------------------------------------------


def test_neutralise():
    assert [neutralise(x) for x in ["=1", "+1", "-1", "@a", "\tx", "\rx", "a=b", "", "'=x"]] == [
        "'=1",
        "'+1",
        "'-1",
        "'@a",
        "'\tx",
        "'\rx",
        "a=b",
        "",
        "'=x",
    ]


def test_formula_like_text_is_neutralised_in_csv_only(study):
    csv_rows = read_csv(export(study, "csv").folder / "answers.csv")
    json_rows = read_jsonl(export(study, "jsonl").folder / "answers.jsonl")
    assert {r["text"] for r in csv_rows} == {"'" + f for f in FORMULAS}
    assert {r["text"] for r in json_rows} == set(FORMULAS)
    reasons = {r["excluded_reason"] for r in read_csv(export(study, "csv").folder / "participants.csv")}
    assert reasons == {"", "'" + EXCLUSION_REASON}
    fb = read_csv(export(study, "csv").folder / "da_feedback.csv")
    assert fb[0]["text"].startswith("'=cmd")
    # numbers are not text: a negative SD value stays a number
    sd = read_csv(export(study, "csv").folder / "sd_ratings.csv")
    assert sd and all(int(r["value"]) in (-3, 3) for r in sd)


# -- formats ---------------------------------------------------------------------------------


def unquote(cell: str) -> str:
    """A neutralised CSV cell back to the text as typed."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] and cell[1] in "=+-@\t\r" else cell


def _normal(value, kind):
    """A cell as one comparable string, whatever the format stored it as."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if kind == "number":
        return repr(float(value))
    if kind in ("integer", "boolean"):
        return str(int(value))
    return str(value)


def test_jsonl_and_parquet_hold_what_csv_holds(study):
    folders = {fmt: export(study, fmt).folder for fmt in ("csv", "jsonl", "parquet")}
    for table, cols in EXPECTED.items():
        kinds = [dictionary.column_type(table, c) for c in cols]
        from_csv = [[unquote(r[c]) for c in cols] for r in read_csv(folders["csv"] / f"{table}.csv")]
        from_jsonl = [
            [_normal(r[c], k) for c, k in zip(cols, kinds)] for r in read_jsonl(folders["jsonl"] / f"{table}.jsonl")
        ]
        frame = pd.read_parquet(folders["parquet"] / f"{table}.parquet")
        assert list(frame.columns) == cols
        from_parquet = [
            [_normal(v, k) for v, k in zip(row, kinds)] for row in frame.astype(object).itertuples(index=False)
        ]
        assert from_jsonl == from_csv, table
        assert from_parquet == from_csv, table
    # typed parquet columns, also for an empty table
    suit = pd.read_parquet(folders["parquet"] / "sd_suitability.parquet")
    assert len(suit) == 0 and str(suit["suitability"].dtype) == "Int64"
    assert str(pd.read_parquet(folders["parquet"] / "validations.parquet")["translation_score"].dtype) == "Float64"


def test_hf_audio_folder(study):
    res = export(study, "hf-audio")
    folder = res.folder
    meta = read_jsonl(folder / "train" / "metadata.jsonl")  # file_name is relative to it
    assert len(meta) == 2 and all(list(m) == METADATA for m in meta)
    for m in meta:
        assert m["file_name"].startswith("audio/") and (folder / "train" / m["file_name"]).is_file()
        assert (folder / "train" / m["file_name"]).read_bytes()[:4] == b"RIFF"
    assert {p.relative_to(folder / "train").as_posix() for p in (folder / "train" / "audio").iterdir()} == {
        m["file_name"] for m in meta
    }
    # the recordings table names the file from the export folder
    assert {r["file_name"] for r in read_jsonl(folder / "tables" / "recordings.jsonl")} == {
        "train/" + m["file_name"] for m in meta
    }
    assert not (folder / "audio").exists() and not (folder / "metadata.jsonl").exists()
    by_sender = {m["sender"]: m for m in meta}
    assert by_sender["sender-001"]["review_decision"] == "accepted"
    assert by_sender["sender-001"]["qc_result"] == "flagged"
    assert by_sender["sender-002"]["qc_transcript"] == S2_TRANSCRIPT
    assert by_sender["sender-001"]["sender_group"] == "USB"
    readme = (folder / "README.md").read_text()
    front = readme.split("---\n")[1]
    assert front.count("config_name:") == 1 and "- config_name: default\n  drop_labels: true\n" in front
    assert (
        '  data_files:\n  - split: train\n    path:\n    - "train/metadata.jsonl"\n    - "train/audio/*.wav"' in front
    )
    assert (folder / "tables" / "answers.jsonl").is_file()
    assert "### `train/metadata.jsonl`" in readme and "| `train/audio/` | 2 |" in readme
    for c in METADATA:
        assert c in dictionary.table_entry("metadata")[1]
    with pytest.raises(ExportError, match="without audio"):
        export(study, "hf-audio", include_audio=False)


def test_missing_audio_and_no_audio(study, tmp_path):
    res = export_study(study["db"], "demo", tmp_path / "x", "csv", media_dir=tmp_path / "nowhere")
    assert sorted(res.missing_audio) == sorted([study["s1"]["recording"], study["s2"]["recording"]])
    assert all(r["file_name"] == "" for r in read_csv(res.folder / "recordings.csv"))
    assert "audio was missing" in (res.folder / "README.md").read_text()
    with pytest.raises(ExportError, match="none of its 2 recordings' files is in .*nowhere"):
        export_study(study["db"], "demo", tmp_path / "hf", "hf-audio", media_dir=tmp_path / "nowhere")
    res = export(study, "jsonl", include_audio=False, include_events=False)
    assert not (res.folder / "audio").exists() and "events" not in res.rows
    assert all(r["file_name"] is None for r in read_jsonl(res.folder / "recordings.jsonl"))


def test_refuses_a_non_empty_folder_and_unknown_things(study, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.csv").write_text("x")
    with pytest.raises(ExportError, match="not empty"):
        export_study(study["db"], "demo", tmp_path / "full", "csv", media_dir=study["media"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # no partial folder left behind
    (tmp_path / "empty").mkdir()
    export_study(study["db"], "demo", tmp_path / "empty", "csv", media_dir=study["media"])
    assert (tmp_path / "empty" / "README.md").is_file()
    with pytest.raises(ExportError, match="unknown study 'nope'.*demo"):
        export_study(study["db"], "nope", tmp_path / "n", "csv")
    with pytest.raises(ExportError, match="unknown format"):
        export_study(study["db"], "demo", tmp_path / "n", "xlsx")


def test_export_zip_for_the_admin_tab(study):
    path = export_zip(study["db"], "demo", study["media"], "csv")
    assert path.suffix == ".zip" and path.is_file()
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        top = names[0].split("/")[0]
        assert all(n.startswith(top + "/") for n in names)
        assert {f"{top}/README.md", f"{top}/manifest.json", f"{top}/participants.csv"} <= set(names)
        assert any(n.startswith(f"{top}/audio/") and n.endswith(".wav") for n in names)
        for secret in study["tokens"]:
            assert all(secret.encode() not in zf.read(n) for n in names)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # only the zip is left


# -- command line ----------------------------------------------------------------------------


def _cli(study, *args):
    env = {
        "PATH": "/usr/bin:/bin",
        "TRADLAB_DB": str(study["tmp"] / "study.db"),
        "TRADLAB_MEDIA": str(study["media"]),
        "HOME": str(study["tmp"]),
    }
    return run_cli("export", *args, env=env)


def test_cli_exit_codes_and_messages(study):
    res = _cli(study, "--study", "nope", "--out", str(study["tmp"] / "cli-x"))
    assert res.returncode == 2 and "unknown study 'nope'" in res.stderr and "demo" in res.stderr
    assert not (study["tmp"] / "cli-x").exists()
    out = study["tmp"] / "cli-ok"
    res = _cli(study, "--study", "demo", "--out", str(out), "--format", "jsonl", "--include-events")
    assert res.returncode == 0, res.stderr
    people = study["db"].scalar("SELECT COUNT(*) FROM participants")
    assert str(out) in res.stdout and f"participants {people}," in res.stdout and "2 audio files" in res.stdout
    assert (out / "events.jsonl").is_file() and (out / "participants.jsonl").is_file()


def test_cli_refusals_in_process(study, monkeypatch, capsys):
    import cli

    monkeypatch.setenv("TRADLAB_DB", str(study["tmp"] / "study.db"))
    monkeypatch.setenv("TRADLAB_MEDIA", str(study["media"]))
    out = study["tmp"] / "cli-in"
    assert (
        cli.main(
            [
                "export",
                "--study",
                "demo",
                "--out",
                str(out),
                "--format",
                "parquet",
                "--no-audio",
                "--include-external-ids",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "0 audio files" in captured.out and "keep this export private" in captured.err
    assert (out / "participants.parquet").is_file() and not (out / "audio").exists()
    assert cli.main(["export", "--study", "demo", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["export", "--study", "demo", "--out", str(study["tmp"] / "cli-y"), "--format", "xlsx"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err
