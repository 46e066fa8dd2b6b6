"""Converters from WMT DA TSV and Appraise CSV exports to the judgments schema (small literal files)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from services.da import analysis as A
from services.da import importer as I

WMT_HEADER = "HITId\tWorkerId\tInput.src\tInput.trg\tInput.item\thit\tsys_id\trid\ttype\tsid\tscore\ttime\traw\n"


def wmt_line(hit, worker, sys_id, kind, sid, raw, time):
    return f"{hit}\t{worker}\tde\ten\tad\t7\t{sys_id}\t100\t{kind}\t{sid}\t-0.5\t{time}\t{raw}\n"


WMT_TSV = WMT_HEADER + "".join(
    [
        wmt_line("H1", "M1", "Online-W.2", "SYSTEM", 11, 80, 600.0),
        wmt_line("H1", "M1", "Online-W.2", "BAD_REF", 11, 20, 600.0),
        wmt_line("H1", "M1", "HUMAN-B", "SYSTEM", 12, 70, 600.0),
        wmt_line("H1", "M1", "HUMAN-B", "REPEAT", 12, 72, 600.0),
        wmt_line("H2", "M2", "Some.Sys.10", "REF", 13, 95, 90.0),
        wmt_line("H2", "M2", "Some.Sys.10", "SYSTEM", 13, 0, 90.0),
    ]
)


def test_from_wmt_tsv(tmp_path):
    p = tmp_path / "wmt.tsv"
    p.write_text(WMT_TSV)
    df = I.from_wmt_tsv(p)
    assert list(df.columns) == A.REQUIRED + ["run", "duration_s"]
    assert df["system"].tolist() == ["Online-W", "Online-W", "HUMAN-B", "HUMAN-B", "Some.Sys", "Some.Sys"]
    assert df["item_type"].tolist() == ["system", "bad_reference", "system", "ask_again", "reference", "system"]
    assert df["score"].tolist() == [80, 20, 70, 72, 95, 0]  # raw, not WMT's z in `score`
    assert df["segment_id"].tolist() == ["11", "11", "12", "12", "13", "13"]
    assert df["worker_id"].tolist() == ["M1"] * 4 + ["M2"] * 2 and df["hit_id"].tolist()[-1] == "H2"
    assert set(df["modality"]) == {"text"} and set(df["run"]) == {1}
    # time is the HIT's seconds on every row: 600 s over H1's 4 rows, 90 s over H2's 2
    assert df["duration_s"].tolist() == [150.0] * 4 + [45.0] * 2
    audio = I.from_wmt_tsv(p, modality="audio", run=2)
    assert set(audio["modality"]) == {"audio"} and set(audio["run"]) == {2}
    assert A.detect_format(p) == "wmt"


def test_wmt_system_name():
    assert I.wmt_system_name("Lan-Bridge.1") == "Lan-Bridge"
    assert I.wmt_system_name("HUMAN-B") == "HUMAN-B"
    assert I.wmt_system_name("HUMAN-B.12") == "HUMAN-B"
    assert I.wmt_system_name("v1.x") == "v1.x"


@pytest.mark.parametrize(
    "text,row,column",
    [
        (
            WMT_HEADER.replace("\traw", "") + wmt_line("H", "M", "S.1", "SYSTEM", 1, 5, 1.0).rsplit("\t", 1)[0] + "\n",
            1,
            "raw",
        ),
        (
            WMT_HEADER + wmt_line("H", "M", "S.1", "SYSTEM", 1, 5, 1.0) + wmt_line("H", "M", "S.1", "BAD", 1, 5, 1.0),
            3,
            "type",
        ),
        (WMT_HEADER + wmt_line("H", "M", "S.1", "SYSTEM", 1, 101, 1.0), 2, "raw"),
        (WMT_HEADER + wmt_line("H", "M", "S.1", "SYSTEM", 1, "x", 1.0), 2, "raw"),
    ],
)
def test_from_wmt_tsv_errors(tmp_path, text, row, column):
    p = tmp_path / "bad.tsv"
    p.write_text(text)
    with pytest.raises(A.DAInputError) as e:
        I.from_wmt_tsv(p)
    assert (e.value.row, e.value.column) == (row, column)
    assert str(p) in str(e.value) and f"row {row}" in str(e.value)


# Appraise's ExportSystemScoresToCSV writes no header: username, systemID, itemID, itemType,
# source language, target language, score, start_time, end_time [, batchNo, item_id]
APPRAISE_SEGMENT = """\
engdeu0101,sysA.txt,678,TGT,eng,deu,76,1511470503.271,1511470509.224
engdeu0101,sysA.txt,678,BAD,eng,deu,12,1511470603.0,1511470605.5
engdeu0101,sysA.txt,678,CHK,eng,deu,74,1511470703.0,1511470713.0
engdeu0101,sysB.txt,679,REF,eng,deu,90,1511470803.0,1511470804.0
engdeu0102,sysB.txt,679,TGT,eng,deu,55,1511470903.0,1511470910.0,17,4242
"""

# document-level DA: documentID and isCompleteDocument come before the times
APPRAISE_DOCUMENT = """\
u1,sysA,3,TGT,ces,eng,60,doc7,False,1600000000.0,1600000004.0
u1,sysA,3,BAD,ces,eng,10,doc7,False,1600000010.0,1600000012.0
u1,sysA,1,TGT,ces,eng,70,doc7,True,1600000020.0,1600000030.0
"""

APPRAISE_NAMED = """\
taskID,systemID,username,email,groups,segmentID,score,startTime,endTime,durationInSeconds,itemType,campaignName
5,sysA,u9,u9@x,NoGroupInfo,12,66,1600000000.0,1600000003.0,3.0,TGT,camp
5,sysA,u9,u9@x,NoGroupInfo,12,64,1600000010.0,1600000012.5,2.5,CHK,camp
"""


def test_from_appraise_segment_export(tmp_path):
    p = tmp_path / "appraise.csv"
    p.write_text(APPRAISE_SEGMENT)
    df = I.from_appraise_csv(p)
    assert list(df.columns) == A.REQUIRED + ["run", "duration_s"]
    assert df["item_type"].tolist() == ["system", "bad_reference", "ask_again", "reference", "system"]
    assert df["worker_id"].tolist() == ["engdeu0101"] * 4 + ["engdeu0102"]
    assert df["system"].tolist() == ["sysA.txt"] * 3 + ["sysB.txt"] * 2
    assert df["segment_id"].tolist() == ["678", "678", "678", "679", "679"]
    assert df["score"].tolist() == [76, 12, 74, 90, 55]
    assert df["duration_s"].round(3).tolist() == [5.953, 2.5, 10.0, 1.0, 7.0]
    assert df["hit_id"].tolist() == ["engdeu0101"] * 4 + ["17"]  # batchNo when exported with --batch-info
    assert A.detect_format(p) == "appraise"


def test_from_appraise_document_export_skips_document_scores(tmp_path):
    p = tmp_path / "doc.csv"
    p.write_text(APPRAISE_DOCUMENT)
    df = I.from_appraise_csv(p)
    assert df["item_type"].tolist() == ["system", "bad_reference"]
    assert df["duration_s"].tolist() == [4.0, 2.0]


def test_from_appraise_named_columns(tmp_path):
    p = tmp_path / "named.csv"
    p.write_text(APPRAISE_NAMED)
    df = I.from_appraise_csv(p, modality="audio")
    assert df["item_type"].tolist() == ["system", "ask_again"]
    assert df["worker_id"].tolist() == ["u9", "u9"] and df["hit_id"].tolist() == ["5", "5"]
    assert df["segment_id"].tolist() == ["12", "12"] and df["duration_s"].tolist() == [3.0, 2.5]
    assert set(df["modality"]) == {"audio"}
    assert A.detect_format(p) == "appraise"


@pytest.mark.parametrize(
    "text,row,column,words",
    [
        (
            APPRAISE_SEGMENT + "u,s,1,XYZ,eng,deu,50,1600000000,1600000001\n",
            6,
            "itemType (column 4)",
            "unknown itemType",
        ),
        ("u,s,1,TGT,eng,deu,abc,1600000000,1600000001\n", 1, "score (column 7)", "not a number"),
        ("u,s,1,TGT,eng,deu,150,1600000000,1600000001\n", 1, "score (column 7)", "outside 0-100"),
        ("u,s,1,TGT,eng,deu,50\n,s,1,TGT,eng,deu,50\n", 2, "username (column 1)", "empty"),
        ("u,s,1,TGT\n", 1, None, "at least 7"),
        (APPRAISE_NAMED.replace(",TGT,", ",FOO,"), 2, "itemType", "unknown itemType"),
    ],
)
def test_from_appraise_errors(tmp_path, text, row, column, words):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(A.DAInputError) as e:
        I.from_appraise_csv(p)
    assert (e.value.row, e.value.column) == (row, column)
    assert str(p) in str(e.value) and words in str(e.value)


def test_run_cli_auto_detects_converted_formats(tmp_path):
    p = tmp_path / "wmt.tsv"
    p.write_text(WMT_TSV)
    text = A.run_cli(p, tmp_path / "out", wmt=True)
    assert "Online-W" in text and "HUMAN-B" in text
    systems = pd.read_csv(tmp_path / "out" / "systems.csv")
    assert set(systems["system"]) == {"Online-W", "HUMAN-B", "Some.Sys"}
    q = tmp_path / "appraise.csv"
    q.write_text(APPRAISE_SEGMENT)
    text = A.run_cli(q, tmp_path / "out2", wmt=True, fmt="auto")
    assert "sysA.txt" in text
    assert math.isfinite(pd.read_csv(tmp_path / "out2" / "systems.csv")["z_mean"].iloc[0])
