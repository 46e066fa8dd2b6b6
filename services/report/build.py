"""`python app.py report --study S` and the Analysis tab's Report button: one HTML file per study
(report-<study>.html) with a part per registered protocol, in registration order, each its
paper's results in the paper's order (the protocol's report_section: services.report.usability,
.da, .sd; .qe from audit folders), the analyses' own files (CSV, ...) in a folder per protocol
beside it. A protocol whose analysis fails says why in each of its items; the report itself is
always written."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import subprocess
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from services.common import protocols as registry
from services.metrics import exchange as exchange_metrics
from services.report.render import render
from services.report.sections import Part, fill
from storage import studies

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gradio", "pandas", "numpy", "scipy", "statsmodels", "factor_analyzer", "plotly", "sqlite-utils")


class ReportError(ValueError):
    """A report that cannot be made (the message names what is wrong)."""


@dataclass
class Report:
    html: Path
    files: list[Path]
    parts: list[Part]
    seconds: float


def app_version() -> str:
    """git describe of the checkout, else "unknown" (the app is not packaged: no version elsewhere)."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"], cwd=ROOT, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown (git not available)"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown (not a git checkout)"


def versions(database, study_id: str, config: dict) -> dict:
    out = {"app": app_version(), "python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    listed = config.get("study", {}).get("protocols") or []
    runs: dict[str, str] = {}  # how each system's outputs were made (Protocol.systems_report)
    for spec in registry.protocols():
        if spec.systems_report is not None and spec.name in listed:
            runs.update(registry.resolve(spec.systems_report)(database, study_id))
    for s in config.get("systems") or []:
        line = s.get("label") or s.get("kind", "")
        out[f"system {s.get('id')}"] = f"{line}; {runs[s.get('id')]}" if s.get("id") in runs else line
    for spec in registry.protocols():
        if spec.metrics_report is None or spec.name not in listed:
            continue
        for line in exchange_metrics.report_lines(registry.resolve(spec.metrics_report)(database, study_id)):
            key, _, rest = line.strip().partition(":")
            out[key] = rest.strip()
    return out


def _failed(protocol: str, section, error: Exception) -> Part:
    module = importlib.import_module(section.__module__)  # its TITLE and ITEMS (Protocol.report_section)
    why = f"The {protocol} analysis failed ({type(error).__name__}: {error}); the rest of the report stands."
    return Part(protocol, module.TITLE, fill(module.ITEMS, {}, why), summary=why)


def zip_report(rep: Report, out_dir) -> Path:
    """The report and its files as one .zip beside them (report-<study>.zip), each at its path
    under out_dir, so the HTML's links to its tables and figures work once unpacked (the
    Analysis tab hands this over, not each file flat: their links were dead)."""
    root = Path(out_dir).resolve()
    path = root / (Path(rep.html).stem + ".zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in [rep.html, *rep.files]:
            z.write(f, Path(f).resolve().relative_to(root).as_posix())
    return path


def build_report(database, study_id: str, out_dir, inputs: dict | None = None) -> Report:
    """Write out_dir/report-<study>.html and the analyses' files under out_dir/<protocol>/.
    inputs: the report's inputs beside the study that a protocol's section reads (the Analysis
    tab's panels give theirs, tabs.analysis_common.ReportInputs; the command line its
    --qe-audit folders as {"qe_audits": [...]})."""
    t0 = time.perf_counter()
    study = studies.get_study(database, study_id) if study_id else None
    if study is None:
        raise ReportError(f"There is no study {study_id!r} in this database.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = study["config"]
    listed = config.get("study", {}).get("protocols") or []
    inputs = dict(inputs or {})  # the report's inputs beside the study (Protocol.report_section)
    parts = []
    for spec in registry.protocols():
        if spec.report_section is None:
            continue
        section = registry.resolve(spec.report_section)
        if spec.in_studies and spec.name not in listed:
            title = importlib.import_module(section.__module__).TITLE
            parts.append(Part(spec.name, title, summary=f"This study has no {spec.name} part (study.protocols)."))
            continue
        try:
            parts.append(section(database, study_id, out, inputs))
        except Exception as e:  # one protocol's failure must not take the others' results with it
            parts.append(_failed(spec.name, section, e))
    files = [Path(f) for p in parts for f in p.files]
    name = study.get("name") or config.get("study", {}).get("name") or study_id
    header = [
        f"Study {study_id}: {name}",
        f"Generated {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by app {app_version()}",
    ]
    page = render(
        f"Results report: {name}",
        header,
        parts,
        config,
        versions(database, study_id, config),
        [f.relative_to(out).as_posix() for f in files if f.suffix in (".csv", ".txt", ".json")],
    )
    path = out / f"report-{study_id}.html"
    path.write_text(page, encoding="utf-8")
    return Report(path, files, parts, time.perf_counter() - t0)
