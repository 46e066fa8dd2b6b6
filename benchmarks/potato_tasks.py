"""Potato (the annotation tool, potato-annotation 2.12.1) beside the app in browser.py: its two
tasks, written at run time into the benchmark's temp folder, and its server.

    .venv/bin/python -m venv .potato && .potato/bin/pip install potato-annotation==2.12.1

Potato runs from its own venv (env POTATO_PYTHON, default ROOT/.potato/bin/python), never the
app's: its dependencies are not the app's. The tasks match the app's pages:
- potato_da: the demo DA campaign's 36 candidate translations, one 0-100 slider each;
- potato_receiver: the demo's 12 human translations under three ids each (36 items), each
  shown with its questions; ten free-text answers, each followed by a "cannot be answered"
  checkbox (Potato's schemes are the same for every item, so the questions are in the text);
- potato_esa: the segments of browser.py's ESA study (esa_segments(), written there as the
  app's corpus), each translation shown alone: Potato's span scheme (`annotation_type: span`,
  labels minor and major: select the words with the mouse, the label checked first) and a
  0-100 slider. Potato 2.12.1 also has an `error_span` type, but it is MQM's (an error type
  from a taxonomy for every span, a score it computes): `span` is ESA's two severities.
A participant logs in by URL (`login.type: url_direct`, `?participant=NAME`), no password, and
lands on the first item.
"""

from __future__ import annotations

import csv
import html
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "assets" / "demo_study"
ESA_EXAMPLE = ROOT / "docs" / "examples" / "esa"
ESA_DOC = 5  # segments a document
ESA_ITEMS = 25
POTATO_VERSION = "2.12.1"
INSTALL = f".venv/bin/python -m venv .potato && .potato/bin/pip install potato-annotation=={POTATO_VERSION}"
TASKS = ("potato_da", "potato_receiver", "potato_esa")
QUESTIONS = 10
COPIES = "abc"
# the app's receiver page words it so (assets/scales.toml)
UNANSWERABLE = "Não é possível responder a partir do texto"
# the demo's starters have 8-10 questions; Potato shows ten boxes on every item
EXTRA_QUESTIONS = ("Que outra informação importante dá o texto?", "Há no texto alguma data ou hora?")


def potato_python() -> Path | None:
    """Potato's interpreter, or None when it is not installed."""
    path = Path(os.environ.get("POTATO_PYTHON") or ROOT / ".potato" / "bin" / "python")
    return path if path.exists() else None


def _rows(name: str) -> list[dict]:
    with open(DEMO / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def da_items() -> list[dict]:
    """The demo DA campaign's candidates (every system's output of every segment)."""
    return [{"id": f"{r['segment_id']}-{r['system']}", "text": r["output"]} for r in _rows("da_segments.csv")]


def receiver_items() -> list[dict]:
    """The demo's human translations, each with its questions in Portuguese (padded to ten)."""
    questions: dict[str, list[str]] = {}
    for q in sorted(_rows("questions.csv"), key=lambda q: int(q["index"])):
        questions.setdefault(q["starter_id"], []).append(q["pt"])
    items = []
    for copy in COPIES:
        for r in _rows("references.csv"):
            qs = (questions[r["starter_id"]] + list(EXTRA_QUESTIONS))[:QUESTIONS]
            assert len(qs) == QUESTIONS, f"{r['starter_id']} has too few questions: add to EXTRA_QUESTIONS"
            listed = "".join(f"<li>{html.escape(q)}</li>" for q in qs)
            text = f"<p>{html.escape(r['translation'])}</p><ol>{listed}</ol>"
            items.append({"id": r["starter_id"] + copy, "text": text})
    return items


def esa_segments(n: int) -> list[dict]:
    """At least n segments for ESA (docs/examples/esa's ten, cycled), in documents of five:
    the rows of the app's corpus CSV (doc_id, segment_id, system, source, target, languages)."""
    with open(ESA_EXAMPLE / "esa_segments.csv", encoding="utf-8", newline="") as f:
        base = list(csv.DictReader(f))
    n = -(-n // ESA_DOC) * ESA_DOC
    return [
        {
            **base[k % len(base)],
            "doc_id": f"doc-{k // ESA_DOC + 1}",
            "segment_id": str(k % ESA_DOC + 1),
            "system": "sysA",
        }
        for k in range(n)
    ]


def esa_items(n: int) -> list[dict]:
    return [{"id": f"{r['doc_id']}-{r['segment_id']}", "text": r["target"]} for r in esa_segments(n)]


def schemes(task: str) -> list[dict]:
    if task == "potato_esa":
        return [
            {
                "annotation_type": "span",
                "name": "errors",
                "description": "Marque os erros da tradução: escolha minor ou major e selecione as palavras",
                "labels": ["minor", "major"],
            },
            {
                "annotation_type": "slider",
                "name": "score",
                "description": "Qual é a qualidade desta tradução? (0-100)",
                "min_value": 0,
                "max_value": 100,
                "starting_value": 50,
            },
        ]
    if task == "potato_da":
        return [
            {
                "annotation_type": "slider",
                "name": "score",
                "description": "Qual é a qualidade desta tradução? (0-100)",
                "min_value": 0,
                "max_value": 100,
                "starting_value": 50,
            }
        ]
    out = []
    for k in range(1, QUESTIONS + 1):
        out.append(
            {
                "annotation_type": "text",
                "name": f"answer_{k}",
                "description": f"Resposta à pergunta {k}",
                "textarea": {"on": True, "rows": 2},
            }
        )
        out.append(
            {
                "annotation_type": "multiselect",
                "name": f"unanswerable_{k}",
                "description": f"Pergunta {k}",
                "labels": [UNANSWERABLE],
            }
        )
    return out


def write_task(dest: Path, task: str, esa_n: int = ESA_ITEMS) -> Path:
    """The task's folder under dest (config.yaml, data/items.jsonl); its config's path. esa_n:
    potato_esa's segments (at least)."""
    import yaml

    folder = dest / task
    (folder / "data").mkdir(parents=True)
    items = {"potato_da": da_items, "potato_receiver": receiver_items}.get(task, lambda: esa_items(esa_n))()
    with open(folder / "data" / "items.jsonl", "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    config = {
        "annotation_task_name": task,
        "task_dir": str(folder),
        "output_annotation_dir": str(folder / "annotation_output"),
        "output_annotation_format": "jsonl",
        "data_files": ["data/items.jsonl"],
        "item_properties": {"id_key": "id", "text_key": "text"},
        "user_config": {"allow_all_users": True, "users": []},
        # the least login there is: the participant's name in the URL, no password, no form
        "login": {"type": "url_direct", "url_argument": "participant"},
        "annotation_schemes": schemes(task),
        "alert_time_each_instance": 10000000,
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.HTTPError:
        return True  # any HTTP answer: the server is up
    except OSError:
        return False
    return True


def start(python: Path, config: Path, port: int, seconds: float = 120):
    """`potato start CONFIG` on 127.0.0.1:port, from the task's folder: (process, log file, url)
    once it answers."""
    log = open(config.parent / "potato.log", "w")
    proc = subprocess.Popen(
        [str(python), "-m", "potato", "start", str(config), "-p", str(port), "--host", "127.0.0.1"],
        cwd=config.parent,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        if _answers(url + "/"):
            return proc, log, url
        time.sleep(0.25)
    proc.kill()
    log.close()
    raise RuntimeError(
        f"Potato ({config.parent.name}) did not start: " + (config.parent / "potato.log").read_text()[-2000:]
    )


def participant_urls(url: str, task: str, n: int) -> list[str]:
    return [f"{url}/?participant={task}-{i + 1}" for i in range(n)]
