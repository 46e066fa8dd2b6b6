"""A recording bounded in samples before it is decoded, decoded one per link and two at a time, and
no voice file left that no row names (issue 49, points 1 and 5).

A cap in seconds is not a cap in samples: 29 s of FLAC silence at 655,350 Hz in 8 channels is
161 KB on the wire and 152 million samples once decoded (+265 MB), refused as silent only after
that, again for each copy sent. Six concurrent submits of one record item had stored one row and
twelve files.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.common import audio_decode
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.usability import audio_intake
from services.usability import protocol as usability_protocol
from services.usability.audio_intake import IntakeError, store_recording
from tests.helpers.audio import write_wav
from tests.helpers.intake_memory import refuse_in_child


def _flac(path: Path, seconds: float, rate: int, channels: int) -> Path:
    with sf.SoundFile(str(path), "w", rate, channels, "PCM_16", format="FLAC") as f:
        block = np.zeros((rate, channels), np.int16)
        for _ in range(int(seconds)):
            f.write(block)
    return path


# ---------------------------------------------------------------- point 1: samples, not seconds


@pytest.mark.slow  # a child process measures the peak
def test_a_small_flac_of_huge_rate_and_channels_is_refused_from_its_header(tmp_path):
    flac = _flac(tmp_path / "wide.flac", 29, 655_350, 8)
    assert flac.stat().st_size < 200 * 1024  # about 161 KB on the wire
    peak, said = refuse_in_child(flac, tmp_path)
    assert said.startswith("This recording's format is not one we take (655,350 Hz, 8 channels"), said
    assert peak < 40, f"peak {peak:.0f} MB above idle"  # before: +265 MB, then "silent"
    assert not (tmp_path / "media" / "recordings").exists()


@pytest.mark.parametrize("rate,channels", [(192_000, 1), (48_000, 3)])
def test_a_wav_beyond_an_ordinary_recording_is_refused_undecoded(tmp_path, monkeypatch, rate, channels):
    path = tmp_path / "x.wav"
    sf.write(str(path), np.zeros((rate, channels), np.int16), rate, subtype="PCM_16")
    reads = []
    monkeypatch.setattr(sf.SoundFile, "read", lambda self, *a, **k: reads.append(1))
    with pytest.raises(IntakeError, match="format is not one we take"):
        store_recording(path, tmp_path / "media", 30)
    assert reads == []  # refused before a sample was read


def test_ordinary_recordings_still_pass(tmp_path):
    for rate, channels in [(48_000, 1), (44_100, 2), (96_000, 2), (16_000, 1)]:
        wav = write_wav(tmp_path / f"{rate}-{channels}.wav", seconds=3.0, rate=rate, channels=channels)
        assert store_recording(wav, tmp_path / "media", 30).duration_s == pytest.approx(3.0, abs=0.01)


def test_the_same_refused_bytes_are_refused_again_without_decoding(tmp_path, monkeypatch):
    silent = tmp_path / "silent.wav"
    sf.write(str(silent), np.zeros(16000 * 3, np.int16), 16000, subtype="PCM_16")
    with pytest.raises(IntakeError, match="silent") as first:
        store_recording(silent, tmp_path / "media", 30)
    calls = []
    real = audio_intake.decode
    monkeypatch.setattr(audio_intake, "decode", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    for _ in range(3):
        with pytest.raises(IntakeError) as again:
            store_recording(silent, tmp_path / "media", 30)
        assert str(again.value) == str(first.value)
    assert calls == []
    # another cap or another text is another verdict: decoded
    with pytest.raises(IntakeError):
        store_recording(silent, tmp_path / "media", 20)
    assert calls == [1]


def test_one_decode_per_link_and_two_in_the_process(monkeypatch):
    inside, release, peak = [0], threading.Event(), [0]
    lock = threading.Lock()

    def hold(key, results):
        try:
            with audio_decode.decode_slot(key, wait_s=5):
                with lock:
                    inside[0] += 1
                    peak[0] = max(peak[0], inside[0])
                release.wait(5)
                with lock:
                    inside[0] -= 1
            results.append("ok")
        except audio_decode.Busy as e:
            results.append(str(e))

    results: list = []
    threads = [threading.Thread(target=hold, args=(f"link-{i}", results)) for i in range(5)]
    for th in threads:
        th.start()
    deadline = time.time() + 5
    while inside[0] < audio_decode.DECODES_AT_ONCE and time.time() < deadline:
        time.sleep(0.01)
    # the same link again while its first recording decodes: refused at once, not queued
    same: list = []
    hold("link-0", same)
    assert same and "still being checked" in same[0]
    time.sleep(0.2)
    assert inside[0] == audio_decode.DECODES_AT_ONCE  # the other three wait for a turn
    release.set()
    for th in threads:
        th.join(10)
    assert results == ["ok"] * 5 and peak[0] == audio_decode.DECODES_AT_ONCE
    # no turn within the wait: the sender is asked to submit again
    with audio_decode.decode_slot("a", wait_s=1), audio_decode.decode_slot("b", wait_s=1):
        with pytest.raises(audio_decode.Busy, match="busy checking other recordings"):
            with audio_decode.decode_slot("c", wait_s=0.1):
                pass


def test_the_record_route_decodes_off_the_event_loop(monkeypatch, tmp_path):
    """Every upload is decoded on a worker thread: a small one had been decoded on the event
    loop, where each submit of the wide FLAC held every other request 1-4.5 s."""
    from web import form_routes

    seen = []

    async def fake_run_action(fn, args, database, on_loop):
        seen.append(on_loop)
        return {}

    monkeypatch.setattr(form_routes, "run_action", fake_run_action)

    class Form:
        upload_field = "audio"
        submit = staticmethod(lambda token, value: {})
        view = staticmethod(lambda token: {})

    small = write_wav(tmp_path / "small.wav", seconds=2.0)  # 170 KB: it had been decoded on the loop

    class Page:
        item_forms = {"record": Form()}
        upload_file_set = {str(small)}

    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    app = Starlette(routes=form_routes.form_routes({"sender": Page()}))
    with TestClient(app) as client:
        r = client.post("/sender/form/record/submit", json={"token": "t", "value": {"audio": str(small)}})
    assert r.status_code == 200 and seen == [False]


# ---------------------------------------------------------------- point 5: no orphan voice files


def _files(media: Path) -> set[str]:
    folder = media / "recordings"
    return {f.name for f in folder.iterdir()} if folder.exists() else set()


def _named(db) -> set[str]:
    return {Path(r[k]).name for r in db.query("SELECT * FROM recordings") for k in ("path_original", "path_16k")}


@pytest.fixture
def sender(demo_db):
    (s,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")
    return s


def test_a_submit_whose_save_does_not_take_its_recording_leaves_no_file(demo_db, sender, tmp_path, monkeypatch):
    """B decodes while A saves the same item: B's save finds it saved, and B's files go."""
    media = tmp_path / "media"
    v = get_view(demo_db, sender.token, "record")
    staged, go_on = threading.Event(), threading.Event()
    real = usability_protocol.store_recording

    def slow_second(*args, **kwargs):
        out = real(*args, **kwargs)
        if threading.current_thread().name == "B":
            staged.set()
            go_on.wait(10)
        return out

    monkeypatch.setattr(usability_protocol, "store_recording", slow_second)
    results = {}

    def submit_as(name, seconds):
        wav = write_wav(tmp_path / f"{name}.wav", seconds=seconds)
        results[name] = submit(demo_db, sender.token, "record", v.item_id, {"audio": str(wav)}, media_dir=media)

    b = threading.Thread(target=submit_as, args=("B", 4.5), name="B")
    b.start()
    assert staged.wait(10)
    assert len(_files(media)) == 2  # B's staged original and 16 kHz copy
    submit_as("A", 4.0)
    go_on.set()
    b.join(10)
    assert results["A"].saved and not results["B"].saved
    assert _files(media) == _named(demo_db) and len(_named(demo_db)) == 2  # before: 4 files


def test_six_concurrent_submits_of_one_item_leave_only_the_saved_files(demo_db, sender, tmp_path, monkeypatch):
    media = tmp_path / "media"
    v = get_view(demo_db, sender.token, "record")
    real = usability_protocol.store_recording

    def as_over_http(*args, **kwargs):  # the upload's copy and a busy server: all six checked first
        out = real(*args, **kwargs)
        time.sleep(0.3)
        return out

    monkeypatch.setattr(usability_protocol, "store_recording", as_over_http)
    wavs = [write_wav(tmp_path / f"{i}.wav", seconds=5.0 + 0.1 * i) for i in range(6)]
    start, outcomes = threading.Barrier(6), []

    def go(wav):
        start.wait()
        try:
            outcomes.append(submit(demo_db, sender.token, "record", v.item_id, {"audio": str(wav)}, media_dir=media))
        except SubmissionError as e:
            outcomes.append(str(e))

    threads = [threading.Thread(target=go, args=(w,)) for w in wavs]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    saved = [o for o in outcomes if not isinstance(o, str) and o.saved]
    assert len(saved) == 1 and len(outcomes) == 6
    assert demo_db.scalar("SELECT COUNT(*) FROM recordings") == 1
    assert _files(media) == _named(demo_db)  # before: 12 files, 10 named by no row


def test_a_failed_write_leaves_no_file(demo_db, sender, tmp_path, monkeypatch):
    from storage.usability import recordings

    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(recordings, "insert_recording", broken)
    v = get_view(demo_db, sender.token, "record")
    with pytest.raises(RuntimeError):
        wav = write_wav(tmp_path / "a.wav")
        submit(demo_db, sender.token, "record", v.item_id, {"audio": str(wav)}, media_dir=tmp_path / "m")
    assert _files(tmp_path / "m") == set()


def test_the_sweep_removes_old_files_no_row_names(tmp_path):
    folder = tmp_path / "media" / "recordings"
    folder.mkdir(parents=True)
    names = ["kept.wav", "orphan.wav", ".staged-abc-x.wav", "young.wav"]
    for n in names:
        (folder / n).write_bytes(b"x")
    old = time.time() - 2 * audio_intake.SWEEP_AFTER_S
    for n in names[:3]:
        os.utime(folder / n, (old, old))
    assert audio_intake.sweep(tmp_path / "media", {"kept.wav"}) == 2
    assert sorted(f.name for f in folder.iterdir()) == ["kept.wav", "young.wav"]


def test_the_upkeep_queues_the_sweep_once_an_hour_and_the_worker_runs_it(demo_db, tmp_path):
    from services.participation import maintenance, worker_jobs
    from services.usability import pipeline

    maintenance.repair(demo_db, "demo")
    maintenance.repair(demo_db, "demo")
    assert demo_db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = ?", [pipeline.SWEEP_KIND]) == 1
    orphan = tmp_path / "media" / "recordings" / "orphan.wav"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"x")
    old = time.time() - 2 * audio_intake.SWEEP_AFTER_S
    os.utime(orphan, (old, old))
    worker_jobs.handlers(demo_db, media_dir=tmp_path / "media")[pipeline.SWEEP_KIND]({})
    assert not orphan.exists()
