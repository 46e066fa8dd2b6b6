"""Issue 51, point 1 without a browser: the signed Prolific study URLs per self-enrolling role
(senders per group x gender cell) with their open slots, as the import prints them and the
admin's CSV holds them (the admin page: tests/test_admin_dashboard_browser.py)."""

from __future__ import annotations

import csv
import os
from urllib.parse import parse_qs, urlparse

from harness.app import ROOT, run_cli
from services.admin import participants as participant_admin
from services.setup.enrolment import add_participants, enrol_from_link


def test_each_self_enrolling_role_gets_a_signed_url_with_its_open_slots(demo_db, tmp_path):
    add_participants(demo_db, "demo", "receiver", 2, self_enrol=True)
    rows = participant_admin.prolific_urls(demo_db, "demo", "https://study.example.org")
    cells = {(r["role"], r["group"], r["gender"]): r for r in rows}
    assert len(rows) == 11 and ("sender", "USB", "Woman") in cells and ("receiver", "", "") in cells
    assert cells[("receiver", "", "")]["open_slots"] == 2 and cells[("validator", "", "")]["open_slots"] == 0
    # a URL as Prolific fills it in enrols into an open slot: the signature holds
    url = cells[("receiver", "", "")]["url"].replace("{{%PROLIFIC_PID%}}", "A" * 24)
    url = url.replace("{{%STUDY_ID%}}", "S1").replace("{{%SESSION_ID%}}", "sess1")
    query = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
    assert enrol_from_link(demo_db, query)["role"] == "receiver"
    text = participant_admin.prolific_text(rows)
    assert "# receiver (2 open slots)\nhttps://study.example.org/?" in text
    path = participant_admin.prolific_csv(demo_db, "demo", "https://study.example.org")
    with open(path, newline="", encoding="utf-8") as f:
        got = list(csv.DictReader(f))
    assert [list(r) for r in got[:1]] == [["role", "group", "gender", "open_slots", "url"]] and len(got) == 11


def test_the_import_prints_the_prolific_urls(tmp_path):
    env = {**os.environ, "TRADLAB_DB": str(tmp_path / "a.db"), "TRADLAB_MEDIA": str(tmp_path / "m")}
    env["TRADLAB_PUBLIC_URL"] = "https://study.example.org"
    res = run_cli("import", ROOT / "assets" / "demo_study", env=env)
    assert res.returncode == 0, res.stderr
    assert "11 Prolific study URLs" in res.stdout and "# sender Hindi Man (0 open slots)" in res.stdout
    assert res.stdout.count("https://study.example.org/?") == 11
