"""Issue 53, point 7: an ESA or MQM annotator's submit-to-next-segment latency with 50 annotators
at once, against a bare Gradio event and a bare JSON route.

    .venv/bin/python benchmarks/span_load.py [--protocol esa|mqm] [--clients 1,10,50]
        [--out benchmarks/results/span_load_esa.json]

The app runs as `python app.py` (TRADLAB_WORKER=0) with a generated study of the protocol: one
HIT per annotator of ITEMS segments (documents of 5 segments, two systems), so every client
holds its own HIT as a WMT campaign's annotators do. Each client first asks for its segment (the
page's view), then submits ITEMS answers one after another through the item form's JSON route,
as the page does (/<role>/form/<role>/submit): one error span over the output's first word
(MQM: with a category) and a 0-100 score; the latency is from sending the submit to holding its
answer, which carries the next segment. The baselines are benchmarks/load.py's no-op server
(the same token and form value): its Gradio event outside the queue (`/noop`, "a bare Gradio
event") and its plain JSON route (/form/noop/submit), run first at each level by the same
number of clients and calls. Writes the p50/p95 of each and p95(submit) / p95(Gradio no-op)
(the issue's target: at most 1.3 at 50 clients).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from benchmarks.load import start_noop, stop_noop, summary  # noqa: E402

ITEMS = 20
DOC = 5  # segments per document: a HIT of ITEMS holds ITEMS / DOC whole documents


def study_folder(tmp: Path, protocol: str, annotators: int) -> Path:
    """A study of `protocol` with one HIT of ITEMS segments per annotator (two systems)."""
    folder = tmp / f"{protocol}-load"
    folder.mkdir(parents=True, exist_ok=True)
    docs = annotators * ITEMS // (2 * DOC)
    with open(folder / "segments.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["doc_id", "segment_id", "system", "source", "target", "source_lang", "target_lang"])
        for d in range(docs):
            for system in ("sysA", "sysB"):
                for s in range(DOC):
                    source = f"The council of town {d} approved item {s} of the new budget on Monday."
                    target = (
                        f"O conselho da vila {d} aprovou o ponto {s} do novo orçamento na segunda-feira ({system})."
                    )
                    w.writerow([f"doc-{d}", s + 1, system, source, target, "en", "pt"])
    (folder / "study.toml").write_text(
        f'[study]\nid = "{protocol}-load"\nname = "Load"\nprotocols = ["{protocol}"]\nseed = 3\n\n'
        f'[{protocol}]\nsegments = "segments.csv"\nhit_size = {ITEMS}\nattention_share = 0\n',
        encoding="utf-8",
    )
    return folder


def answer(protocol: str, content: dict, k: int) -> dict:
    """A complete answer: the output's first word marked (a major error; MQM's with a category)."""
    target = content.get("target") or content.get("output") or ""
    first = target.split(" ")[0] or target[:1]
    span = {"start": 0, "end": len(first), "text": first, "severity": "major", "missing": False}
    if protocol == "mqm":
        span["category"] = "Accuracy/Mistranslation"
        return {"spans": json.dumps([span])}
    return {"spans": json.dumps([span]), "score": 40 + k}


def run_level(url: str, tokens: list[str], protocol: str | None, route: str = "") -> tuple[list[float], float, list]:
    """Each client on its own thread: its view, then ITEMS submits in turn. protocol None: the
    no-op server (route "event": its Gradio event, "json": its JSON route)."""
    import httpx

    from harness.gradio_http import GradioHTTP

    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(len(tokens))

    def client(tok: str):
        mine = []
        try:
            if protocol is None and route == "event":
                with GradioHTTP(url, timeout=120) as c:
                    c.predict(tok, {"item_id": "0", "answer": {"score": 1}}, api_name="/noop")
                    start.wait(60)
                    for k in range(ITEMS):
                        t0 = time.perf_counter()
                        c.predict(tok, {"item_id": str(k + 1), "answer": {"score": 1 + k}}, api_name="/noop")
                        mine.append(time.perf_counter() - t0)
            else:
                with httpx.Client(base_url=url, timeout=120) as c:
                    if protocol is None:
                        submit = "/form/noop/submit"
                        view = {"item_id": "1", "content": {}}
                    else:
                        submit = f"/{protocol}/form/{protocol}/submit"
                        view = c.post(f"/{protocol}/form/{protocol}/view", json={"token": tok}).json()["value"]
                    start.wait(60)
                    for k in range(ITEMS):
                        value = {"item_id": view["item_id"], "answer": answer(protocol or "esa", view["content"], k)}
                        t0 = time.perf_counter()
                        res = c.post(submit, json={"token": tok, "value": value})
                        mine.append(time.perf_counter() - t0)
                        got = res.json()["value"]
                        if protocol is not None:
                            if (
                                res.status_code != 200
                                or got.get("error")
                                or got.get("status") not in ("item", "complete")
                            ):
                                raise RuntimeError(f"not saved: {str(got)[:300]}")
                            view = got
        except Exception as e:  # reported, never hidden
            with lock:
                errors.append(f"{type(e).__name__}: {e}")
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(t,), daemon=True) for t in tokens]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    return lat, time.perf_counter() - t0, errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", default="esa", choices=["esa", "mqm"])
    ap.add_argument("--clients", default="1,10,50")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out_path = Path(args.out or ROOT / "benchmarks" / "results" / f"span_load_{args.protocol}.json")

    from harness.app import RunningApp

    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    need = sum(levels)
    tmp = Path(tempfile.mkdtemp(prefix="tradlab-span-load-"))
    app = RunningApp(tmp, {"TRADLAB_WORKER": "0"})
    study = f"{args.protocol}-load"
    app.prepare(
        ("import", str(study_folder(tmp, args.protocol, need))),
        ("participants", "add", "--study", study, "--role", args.protocol, "--count", str(need)),
    )
    tokens = [r[0] for r in app.rows("SELECT token FROM participants WHERE study_id = ? ORDER BY id", (study,))]
    results, noop = [], None
    try:
        app.start()
        noop, noop_log, noop_url = start_noop(tmp)
        for c in levels:
            group, tokens = tokens[:c], tokens[c:]
            row: dict = {"clients": c}
            errors: list[str] = []
            for name, (url, protocol, route) in {
                "noop_event": (noop_url, None, "event"),
                "noop_json": (noop_url, None, "json"),
                "submit": (app.url, args.protocol, ""),
            }.items():
                lat, wall, err = run_level(url, group, protocol, route)
                row[name] = summary(lat, wall)
                errors += err
            row["errors"] = errors[:10]
            row["ratio_p95_vs_event"] = round(row["submit"]["p95_ms"] / row["noop_event"]["p95_ms"], 2)
            row["ratio_p95_vs_json"] = round(row["submit"]["p95_ms"] / row["noop_json"]["p95_ms"], 2)
            row["load_average"] = [round(x, 2) for x in os.getloadavg()]
            results.append(row)
            print(
                f"{c:3d} clients: {args.protocol} submit p50 {row['submit']['p50_ms']} p95 {row['submit']['p95_ms']} ms"
                f" | Gradio no-op p95 {row['noop_event']['p95_ms']} | JSON no-op p95 {row['noop_json']['p95_ms']}"
                f" | ratio {row['ratio_p95_vs_event']} (vs JSON {row['ratio_p95_vs_json']})"
                + (f" | {len(errors)} errors: {errors[0]}" if errors else ""),
                flush=True,
            )
    finally:
        app.stop()
        if noop is not None:
            stop_noop(noop, noop_log)
        if not any(r["errors"] for r in results):
            shutil.rmtree(tmp, ignore_errors=True)
    at50 = next((r for r in results if r["clients"] == 50), None)
    result = {
        "benchmark": "span_load",
        "protocol": args.protocol,
        "what": "submit-to-next-segment latency through the item form's JSON route vs a bare Gradio event "
        "and a bare JSON route, same clients and calls",
        "machine": machine(),
        "items_per_client": ITEMS,
        "levels": results,
        "target": "p95(submit) / p95(bare Gradio event) <= 1.3 at 50 clients",
        "target_met": None if at50 is None else at50["ratio_p95_vs_event"] <= 1.3,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
