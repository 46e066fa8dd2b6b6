"""GATE and GeNTE to PAIRS frames for the QE gender audit: the two other benchmarks of paper 003
(section 2.1: "MT-GenEval ... GATE (Rarrick et al., 2023) ... the GeNTE corpus (Piergentili et
al., 2023b)"; results in its appendix B.1 and B.2). The user supplies the files; nothing is
downloaded.

GATE (github.com/MicrosoftTranslator/GATE; English -> es, fr, it). The paper uses "all
instances with one gender-marked entity", i.e. the two-variant files. Layout (``root`` is the
repository folder, or give the file itself)::

    data/test_set/{ES,FR,IT}/{XX}_2_variants.txt     the test half (read by default, split "test")
    data/dev_test_split/{XX}/{XX}_2_variants_split.txt (split "dev", when present)
    data/{XX}/{XX}_2_variants.tsv                    every tuple (split "all")

Each is tab-separated with a header row; the columns read are ``source`` (the English sentence,
its one entity ambiguous), ``f`` and ``m`` (the translations with the feminine / masculine
inflection) and, when present, ``labels`` (GATE's category labels, e.g. "PROF;SUBJ"), kept as a
provenance column; ``kw_s``, ``kw_f``, ``kw_m`` (key words) are ignored. Quotes are ordinary
characters (the files are not CSV-quoted). Every row is an ambiguous F/M instance (no gold):
``instance_id`` gate-{split}-{line}, ``lang`` the lower-case code, ``source``, ``hyp_f``,
``hyp_m``.

GeNTE (huggingface.co/datasets/FBK-MT/GeNTE, mt.fbk.eu/gente; English -> Italian, Europarl).
One tab-separated file, ``GeNTE.tsv``, a header row and one row per sentence with the columns
``ID``, ``SET`` (Set-N: the English source is gender-ambiguous and calls for a gender-neutral
translation; Set-G: the source marks the gender), ``SRC`` (English), ``REF-G`` (the gendered
Italian reference), ``REF-N`` (the gender-neutral one) and, for Set-G, ``GENDER`` (F / M, the
gender of the referent; other values are treated as unknown). Column names are matched
ignoring case and "-"/"_". Rows become N/G instances: ``instance_id`` gente-{ID}, ``lang`` "it",
``source`` = SRC, ``hyp_n`` = REF-N, ``hyp_g`` = REF-G. ``subset``: "set-n" (default, the
paper's section 3 audit of ambiguous sources, its Figure 7a), "set-g" (Figure 7b: gold = GENDER,
so the audit splits the ratios by source gender; rows without F/M are left out and counted) or
"all" (no gold).

Frames carry provenance columns that read_pairs ignores and ``attrs["gate"]`` /
``attrs["gente"]`` with the counts.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pandas as pd

GATE_LANGS = ("es", "fr", "it")
GATE_SPLITS = ("test", "dev", "all")
GENTE_SUBSETS = ("set-n", "set-g", "all")


class BenchmarkMissing(FileNotFoundError):
    """Benchmark files not found where expected."""


def _read_tsv(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: empty file (expected a header row)") from None
    except pd.errors.ParserError as e:
        raise ValueError(f"{path}: not a readable tab-separated file ({e})") from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _key(name: str) -> str:
    return re.sub(r"[-_\s]", "", str(name)).lower()


def _columns(df: pd.DataFrame, path: Path, required: dict[str, str], optional: dict[str, str]) -> dict[str, str]:
    """Our name -> the file's column, matched ignoring case and '-'/'_'."""
    found = {_key(c): c for c in df.columns}
    out = {}
    for ours, theirs in {**required, **optional}.items():
        if _key(theirs) in found:
            out[ours] = found[_key(theirs)]
        elif ours in required:
            raise ValueError(f"{path}: no column {theirs!r} (found: {', '.join(df.columns)})")
    return out


# ---------------------------------------------------------------------------------------------
# GATE


def gate_path(root, lang: str, split: str = "test") -> Path:
    """The two-variant file of ``lang`` under a GATE repository folder (or ``root`` itself when
    it is a file)."""
    root = Path(root)
    if root.is_file():
        return root
    if lang not in GATE_LANGS:
        raise ValueError(f"GATE has no language {lang!r} (one of: {', '.join(GATE_LANGS)})")
    if split not in GATE_SPLITS:
        raise ValueError(f"unknown GATE split {split!r} (one of: {', '.join(GATE_SPLITS)})")
    up = lang.upper()
    candidates = {
        "test": [f"data/test_set/{up}/{up}_2_variants.txt"],
        "dev": [f"data/dev_test_split/{up}/{up}_2_variants_split.txt"],
        "all": [f"data/{up}/{up}_2_variants.tsv", f"data/{up}/{up}_2_variants.txt"],
    }[split]
    for rel in candidates:
        if (root / rel).is_file():
            return root / rel
    raise BenchmarkMissing(
        f"GATE {split} file for en-{lang} not found under {root}: expected "
        + " or ".join(candidates)
        + " (the GATE repository's layout)"
    )


def gate(root, lang: str, split: str = "test") -> pd.DataFrame:
    """A PAIRS frame (ambiguous, F/M) from GATE's two-variant file of ``lang``."""
    path = gate_path(root, lang, split)
    df = _read_tsv(path)
    cols = _columns(df, path, {"source": "source", "f": "f", "m": "m"}, {"labels": "labels"})
    rows, blank, identical = [], 0, 0
    for pos in range(len(df)):
        rec = df.iloc[pos]
        line = pos + 2  # the header is line 1
        src, f, m = (str(rec[cols[k]]).strip() for k in ("source", "f", "m"))
        if not (src and f and m):
            blank += 1
            continue
        identical += f == m
        rows.append(
            {
                "instance_id": f"gate-{split}-{line:05d}",
                "lang": lang,
                "source": src,
                "hyp_f": f,
                "hyp_m": m,
                "line": line,
                "labels": str(rec[cols["labels"]]).strip() if "labels" in cols else "",
            }
        )
    out = pd.DataFrame(rows, columns=["instance_id", "lang", "source", "hyp_f", "hyp_m", "line", "labels"])
    out.attrs["gate"] = {
        "file": str(path),
        "lang": lang,
        "split": split,
        "rows": len(df),
        "instances": len(out),
        "blank_dropped": blank,
        "identical_forms": int(identical),
    }
    return out


# ---------------------------------------------------------------------------------------------
# GeNTE


def gente_path(root) -> Path:
    root = Path(root)
    if root.is_file():
        return root
    for rel in ("GeNTE.tsv", "data/GeNTE.tsv"):
        if (root / rel).is_file():
            return root / rel
    raise BenchmarkMissing(f"GeNTE.tsv not found under {root} (give the file, or the folder holding it)")


def _set_name(value: str) -> str:
    v = _key(value)
    return {"setn": "set-n", "n": "set-n", "setg": "set-g", "g": "set-g"}.get(v, "")


def gente(root, subset: str = "set-n") -> pd.DataFrame:
    """A PAIRS frame (N/G contrast, lang "it") from GeNTE.tsv; see the module docstring."""
    if subset not in GENTE_SUBSETS:
        raise ValueError(f"unknown GeNTE subset {subset!r} (one of: {', '.join(GENTE_SUBSETS)})")
    path = gente_path(root)
    df = _read_tsv(path)
    cols = _columns(
        df, path, {"set": "SET", "source": "SRC", "ref_g": "REF-G", "ref_n": "REF-N"}, {"id": "ID", "gender": "GENDER"}
    )
    rows, unknown_set, no_gender = [], 0, 0
    for pos in range(len(df)):
        rec = df.iloc[pos]
        which = _set_name(rec[cols["set"]])
        if not which:
            unknown_set += 1
            continue
        if subset != "all" and which != subset:
            continue
        gender = str(rec[cols["gender"]]).strip().upper()[:1] if "gender" in cols else ""
        gender = gender if gender in ("F", "M") else ""
        if subset == "set-g" and not gender:
            no_gender += 1
            continue
        ident = str(rec[cols["id"]]).strip() if "id" in cols else ""
        row = {
            "instance_id": f"gente-{ident or pos + 2}",
            "lang": "it",
            "source": str(rec[cols["source"]]).strip(),
            "hyp_n": str(rec[cols["ref_n"]]).strip(),
            "hyp_g": str(rec[cols["ref_g"]]).strip(),
            "set": which,
            "line": pos + 2,
            "referent_gender": gender,
        }
        if subset == "set-g":
            row["gold"] = gender
        rows.append(row)
    columns = (
        ["instance_id", "lang", "source", "hyp_n", "hyp_g"]
        + (["gold"] if subset == "set-g" else [])
        + ["set", "line", "referent_gender"]
    )
    out = pd.DataFrame(rows, columns=columns)
    out.attrs["gente"] = {
        "file": str(path),
        "subset": subset,
        "rows": len(df),
        "instances": len(out),
        "unknown_set": unknown_set,
        "no_gender_dropped": no_gender,
    }
    return out
