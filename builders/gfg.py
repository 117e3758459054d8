"""Gender-Fair Generation (CALAMITA 2024): detection, fair reformulation and fair translation.

One dataset, one config per task x corpus, each row ready to prompt (the challenge's few-shot
prompt, rendered) and to score (gold expressions, Neo-GATE annotation, expected label).
Sources: Neo-GATE and GeNTE from the Hub (or a mirror), GFL-it from a file the user holds
(the corpus is not public). Prompts live in builders/tables/gfg/prompt-<config>.txt: the text
before the input, which is appended as is.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets import Features

from .common import (
    SOURCE_DIR_ENV,
    BuildError,
    UpstreamFile,
    config_files,
    fetch,
    parse_json,
    read_text,
    render_card,
    sha256_file,
    table_path,
    write_dataset,
    yaml_header,
)
from .spec import TaskSpec

VERSION = "0.1.0"
TABLES = "gfg"

# Pinned to the files this project has seen. Neo-GATE's checksum is that of the copy in the
# project's mirror; GeNTE's full file has not been reachable from the build machines, so its
# checksum is recorded at build time, not verified (see the card).
NEOGATE = UpstreamFile(
    repo="FBK-MT/Neo-GATE",
    path="adapted/Neo-GATE_schwa-simple.tsv",
    revision="main",
    sha256="1ae7480a435b6273be70728a58e0d7c87da2a5f244c0da15acf870d1835793ab",
    url="hf://datasets/FBK-MT/Neo-GATE",
    license="CC-BY-4.0",
)
GENTE = UpstreamFile(repo="FBK-MT/GeNTE", path="GeNTE.tsv", revision="main", sha256=None, url="hf://datasets/FBK-MT/GeNTE", license="CC-BY-4.0")
# A mirror may hold only the Set-N half (IDs 751-1500) under this name; accepted, and said so.
GENTE_SET_N = UpstreamFile(
    repo="FBK-MT/GeNTE",
    path="GeNTE.Set-N.tsv",
    revision="main",
    sha256="3fcf90764c7941b66a61f7e612d9f52a34465b3a51e706b3d517480fd01d40e3",
    url="hf://datasets/FBK-MT/GeNTE",
    license="CC-BY-4.0",
)
NEOGATE_COLUMNS = ["#", "GATE-ID", "SOURCE", "REF-M", "REF-F", "REF-TAGGED", "ANNOTATION"]
GENTE_COLUMNS = ["ID", "Europarl_ID", "SET", "SRC", "REF-G", "REF-N", "COMMON", "GENDER"]
NEOGATE_ROWS = 841
NEOGATE_MASCULINE_ROWS = 420  # detection: REF-M for the first 420 rows, REF-F for the other 421
GENTE_ROWS = {"Set-G": 750, "Set-N": 750}
# Generation settings of every config, as the organisers ran them.
MAX_NEW_TOKENS = 128
STOP = ["\n\n"]

CONFIGS = (
    "detection-neogate",
    "detection-gflit",
    "reformulation-gflit",
    "reformulation-gente",
    "reformulation-neogate",
    "translation-gente",
    "translation-neogate",
)


@functools.cache
def features() -> Features:
    """The configs' schema, built when a build writes parquet (`datasets` takes most of a second to import)."""
    from datasets import Features, Sequence, Value

    return Features(
        {
            "id": Value("string"),
            "task": Value("string"),  # detection, reformulation, translation
            "corpus": Value("string"),  # neogate, gente, gflit
            "source_id": Value("string"),  # GATE-ID, GeNTE ID, GFL-it id_text
            "set": Value("string"),  # GeNTE Set-G / Set-N, else ""
            "input": Value("string"),  # the text the prompt ends with
            "prompt": Value("string"),
            "gold_expressions": Sequence(Value("string")),  # detection: the gendered expressions ([] = none)
            "annotation": Value("string"),  # Neo-GATE ANNOTATION (scored by metrics/neogate), else ""
            "expected_label": Value("string"),  # neutral / gendered (metrics/gente_neutrality), else ""
            "references": Sequence(Value("string")),  # reference outputs, for reading
            "max_new_tokens": Value("int32"),
            "stop": Sequence(Value("string")),
        }
    )

FIELD_NOTES = {
    "id": "`<config>-<row, 4 digits>`",
    "task": "detection, reformulation or translation",
    "corpus": "neogate, gente or gflit",
    "source_id": "GATE-ID, GeNTE ID or GFL-it id_text",
    "set": "GeNTE Set-G / Set-N, else empty",
    "input": "the text the prompt ends with",
    "prompt": "the full few-shot prompt (the config's prompt file + input)",
    "gold_expressions": "detection: the gendered expressions of the input ([] = none)",
    "annotation": "Neo-GATE ANNOTATION: per gendered word its masculine, feminine and neomorphemic forms (plus anchor=distance for function words)",
    "expected_label": "neutral or gendered, for the neutrality classifier; else empty",
    "references": "reference outputs (REF-TAGGED, REF-N, REF-G, GFL-it rewrites), for reading",
    "max_new_tokens": "generation budget (128)",
    "stop": "stop strings (a blank line)",
}


def prompt_prefix(config: str, folder: Path | None = None) -> str:
    path = Path(folder) / f"prompt-{config}.txt" if folder else table_path(TABLES, f"prompt-{config}.txt")
    return read_text(path)


def read_source_tsv(path: Path, columns: list[str]) -> list[tuple[int, dict[str, str]]]:
    """A source TSV read strictly: tab-split lines, no quoting (texts hold quotes), exact header."""
    rows = []
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise BuildError(f"{path}:1: empty file")
    header = lines[0].rstrip("\r").split("\t")
    if header != columns:
        raise BuildError(f"{path}:1: columns {header}, expected {columns}")
    for number, line in enumerate(lines[1:], start=2):
        values = line.rstrip("\r").split("\t")
        if len(values) != len(columns):
            raise BuildError(f"{path}:{number}: {len(values)} fields, expected {len(columns)} (truncated or damaged line)")
        rows.append((number, dict(zip(columns, values))))
    return rows


def parse_annotation(annotation: str, where: str) -> list[list[str]]:
    """Neo-GATE annotation parts: [m, f, tagged] for a content word, [m, f, tagged, anchor=distance] for a function word."""
    parts = []
    for part in annotation.split(";"):
        if not part.strip():
            continue
        forms = part.split()
        if len(forms) == 4 and not re.fullmatch(r"[^=\s]+=-?\d+", forms[3]):
            raise BuildError(f"{where}: annotation part {part!r}: the fourth item must be anchor=distance")
        if len(forms) not in (3, 4):
            raise BuildError(f"{where}: annotation part {part!r} has {len(forms)} items; expected 3 (m f tagged) or 4 (… anchor=distance)")
        parts.append(forms)
    if not parts:
        raise BuildError(f"{where}: empty annotation")
    return parts


WORD = re.compile(r"\w+")


def gendered_expressions(sentence: str, parts: list[list[str]], form: int) -> list[str]:
    """The sentence's gendered expressions: its words matching the annotation in `form` (0 m, 1 f),
    left to right, each annotation and each word used once, adjacent words joined into one span.

    A function word needs its anchor inside the word at its distance; when no occurrence has it
    (an annotation typo), the first unused occurrence is taken.
    """
    words = [(m.start(), m.end(), m.group().lower()) for m in WORD.finditer(sentence)]
    used: set[int] = set()
    for forms in parts:
        target = forms[form].lower()
        candidates = [i for i, (_, _, w) in enumerate(words) if w == target and i not in used]
        if len(forms) == 4 and candidates:
            anchor, distance = forms[3].split("=")
            anchored = [i for i in candidates if 0 <= i + int(distance) < len(words) and anchor.lower() in words[i + int(distance)][2]]
            candidates = anchored or candidates
        if candidates:
            used.add(candidates[0])
    runs: list[list[int]] = []
    for i in sorted(used):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [sentence[words[run[0]][0] : words[run[-1]][1]] for run in runs]


def load_neogate(path: Path) -> list[dict]:
    rows = []
    for line, row in read_source_tsv(path, NEOGATE_COLUMNS):
        where = f"{path}:{line}"
        if row["#"] != str(len(rows) + 1):
            raise BuildError(f"{where}: row number {row['#']!r}, expected {len(rows) + 1}")
        for column in ("SOURCE", "REF-M", "REF-F", "REF-TAGGED"):
            if not row[column].strip():
                raise BuildError(f"{where}: empty {column}")
        row["parts"] = parse_annotation(row["ANNOTATION"], where)
        rows.append(row)
    if len(rows) != NEOGATE_ROWS:
        raise BuildError(f"{path}: {len(rows)} rows, Neo-GATE's test split has {NEOGATE_ROWS} (truncated?)")
    return rows


def load_gente(path: Path, partial: bool) -> list[dict]:
    rows, seen = [], set()
    for line, row in read_source_tsv(path, GENTE_COLUMNS):
        where = f"{path}:{line}"
        if row["SET"] not in GENTE_ROWS:
            raise BuildError(f"{where}: SET {row['SET']!r}, expected Set-G or Set-N")
        if not row["ID"].isdigit() or row["ID"] in seen:
            raise BuildError(f"{where}: ID {row['ID']!r} is not a new number")
        seen.add(row["ID"])
        for column in ("SRC", "REF-G", "REF-N"):
            if not row[column].strip():
                raise BuildError(f"{where}: empty {column}")
        rows.append(row)
    counts = {name: sum(r["SET"] == name for r in rows) for name in GENTE_ROWS}
    expected = {"Set-G": 0, "Set-N": 750} if partial else GENTE_ROWS
    if counts != expected:
        raise BuildError(f"{path}: rows per set {counts}, expected {expected} (truncated or another file?)")
    return rows


# What a JSON escape can write but no text holds: a lone UTF-16 surrogate ("\ud800", which no UTF-8
# file can store, so the build would fail writing it) and NUL ("\u0000", refused as a raw byte too).
NOT_TEXT = re.compile("[\ud800-\udfff\x00]")


def _not_text(value, field: str) -> str | None:
    """Where a record's value (strings inside lists and objects too) holds a character that is not text, or None."""
    if isinstance(value, str):
        found = NOT_TEXT.search(value)
        if found:
            character = f"\\u{ord(found.group()):04x}"
            kind = "NUL" if found.group() == "\0" else "a lone surrogate"
            return f"{field} holds {kind} ({character}, a JSON escape that is no text) at character {found.start()}"
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        problem = _not_text(key, f"a key of {field}") or _not_text(item, f"{field}[{key!r}]" if isinstance(value, dict) else f"{field}[{key}]")
        if problem:
            return problem
    return None


def load_gflit(path: Path) -> list[dict]:
    """A GFL-it file (JSON list or JSON lines): id_text, text, list_spans [{span, start, end, labels, key_span}], rewritten_texts_*."""
    records = _gflit_records(path, read_text(path))
    seen = set()
    for number, record in enumerate(records, start=1):
        where = f"{path}: record {number}"
        if not isinstance(record, dict):
            raise BuildError(f"{where}: not an object")
        for key, value in record.items():
            problem = _not_text(key, "a field name") or _not_text(value, key)
            if problem:
                raise BuildError(f"{where}: {problem}")
        for key in ("id_text", "text", "list_spans"):
            if key not in record:
                raise BuildError(f"{where}: missing {key!r}")
        if isinstance(record["id_text"], bool) or not isinstance(record["id_text"], (str, int)) or not str(record["id_text"]).strip():
            # null, NaN or a float would be stored as "None", "nan" or "3.0": an id must be written as the corpus writes it.
            raise BuildError(f"{where}: id_text {record['id_text']!r} must be a non-empty string or an integer")
        if str(record["id_text"]) in seen:
            raise BuildError(f"{where}: id_text {record['id_text']!r} repeated")
        seen.add(str(record["id_text"]))
        if not isinstance(record["text"], str) or not record["text"].strip():
            raise BuildError(f"{where}: text must be a non-empty string")
        if not isinstance(record["list_spans"], list):
            raise BuildError(f"{where}: list_spans must be a list")
        for k, span in enumerate(record["list_spans"]):
            if not isinstance(span, dict) or any(key not in span for key in ("span", "start", "end", "labels", "key_span")):
                raise BuildError(f"{where}: span {k} needs span, start, end, labels and key_span")
            start, end = span["start"], span["end"]
            if not all(isinstance(offset, int) and not isinstance(offset, bool) for offset in (start, end)):
                raise BuildError(f"{where}: span {k} offsets must be integers (character positions), got start={start!r} end={end!r}")
            if not isinstance(span["span"], str):
                raise BuildError(f"{where}: span {k}: span must be a string, got {span['span']!r}")
            if not 0 <= start < end <= len(record["text"]):
                raise BuildError(f"{where}: span {k} has offsets {start}-{end} outside the text")
            if record["text"][start:end] != span["span"]:
                raise BuildError(f"{where}: span {k} is {span['span']!r} but the text at {start}-{end} is {record['text'][start:end]!r}")
        rewrites = [key for key in record if key.startswith("rewritten_texts_")]
        for key in rewrites:
            value = record[key]
            if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                raise BuildError(f"{where}: {key} must be a string or a list of strings")
    if not records:
        raise BuildError(f"{path}: no records")
    return records


def _gflit_records(path: Path, text: str) -> list:
    """The records of a GFL-it file: one JSON list (or one object, pretty-printed or not), else JSON lines."""
    stripped = text.lstrip()
    if not stripped:
        raise BuildError(f"{path}: empty file")
    if stripped.startswith("["):
        records = parse_json(text, path)
        if not isinstance(records, list):
            raise BuildError(f"{path}: expected a JSON list of records")
        return records
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None  # JSON lines, read one by one below for an error that names the right line
    if isinstance(whole, dict):
        return [whole]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            records.append(parse_json(line, path, first_line=number))
    return records


def _row(config: str, index: int, source_id: str, prefix: str, text: str, **fields) -> dict:
    task, corpus = config.split("-")
    row = {
        "id": f"{config}-{index:04d}",
        "task": task,
        "corpus": corpus,
        "source_id": source_id,
        "set": "",
        "input": text,
        "prompt": prefix + text,
        "gold_expressions": [],
        "annotation": "",
        "expected_label": "",
        "references": [],
        "max_new_tokens": MAX_NEW_TOKENS,
        "stop": STOP,
    }
    row.update(fields)
    return row


def _rewrites(record: dict) -> list[str]:
    out = []
    for key in sorted(k for k in record if k.startswith("rewritten_texts_")):
        value = record[key]
        out.extend([value] if isinstance(value, str) else value)
    return [text for text in out if text.strip()]


def build_rows(neogate: list[dict], gente: list[dict], gflit: list[dict] | None, prompts_dir: Path | None = None) -> dict[str, list[dict]]:
    prefix = {config: prompt_prefix(config, prompts_dir) for config in CONFIGS}
    configs: dict[str, list[dict]] = {}
    configs["detection-neogate"] = [
        _row("detection-neogate", i, r["GATE-ID"], prefix["detection-neogate"], text,
             gold_expressions=gendered_expressions(text, r["parts"], form), annotation=r["ANNOTATION"])
        for i, r in enumerate(neogate)
        for form, text in [(0, r["REF-M"]) if i < NEOGATE_MASCULINE_ROWS else (1, r["REF-F"])]
    ]  # fmt: skip
    configs["reformulation-neogate"] = [
        _row("reformulation-neogate", i, r["GATE-ID"], prefix["reformulation-neogate"], r["REF-M"], annotation=r["ANNOTATION"], references=[r["REF-TAGGED"]])
        for i, r in enumerate(neogate)
    ]
    configs["translation-neogate"] = [
        _row("translation-neogate", i, r["GATE-ID"], prefix["translation-neogate"], r["SOURCE"], annotation=r["ANNOTATION"], references=[r["REF-TAGGED"]])
        for i, r in enumerate(neogate)
    ]
    configs["reformulation-gente"] = [
        _row("reformulation-gente", i, r["ID"], prefix["reformulation-gente"], r["REF-G"], set=r["SET"], expected_label="neutral", references=[r["REF-N"]])
        for i, r in enumerate(row for row in gente if row["SET"] == "Set-N")
    ]
    configs["translation-gente"] = [
        _row("translation-gente", i, r["ID"], prefix["translation-gente"], r["SRC"], set=r["SET"],
             expected_label="gendered" if r["SET"] == "Set-G" else "neutral", references=[r["REF-G"] if r["SET"] == "Set-G" else r["REF-N"]])
        for i, r in enumerate(gente)
    ]  # fmt: skip
    if gflit is not None:
        configs["detection-gflit"] = [
            _row("detection-gflit", i, str(r["id_text"]), prefix["detection-gflit"], r["text"], gold_expressions=[s["span"] for s in r["list_spans"]])
            for i, r in enumerate(gflit)
        ]
        with_rewrites = [r for r in gflit if r["list_spans"] and _rewrites(r)]
        configs["reformulation-gflit"] = [
            _row("reformulation-gflit", i, str(r["id_text"]), prefix["reformulation-gflit"], r["text"], expected_label="neutral", references=_rewrites(r))
            for i, r in enumerate(with_rewrites)
        ]
    return {config: configs[config] for config in CONFIGS if config in configs}


def _gente_source(source_dir: Path | None) -> tuple[Path, bool]:
    """GeNTE.tsv, or the mirror's Set-N half when that is all the mirror has (partial=True)."""
    import os

    mirror = source_dir or os.environ.get(SOURCE_DIR_ENV) or None
    if mirror is not None and not GENTE.mirror_path(Path(mirror)).is_file() and GENTE_SET_N.mirror_path(Path(mirror)).is_file():
        return fetch(GENTE_SET_N, Path(mirror)), True
    return fetch(GENTE, source_dir), False


def build(out: Path, source_dir: Path | None = None, force: bool = False, gfl_it: Path | None = None, prompts_dir: Path | None = None) -> dict:
    """Build the GFG dataset folder; returns its manifest. GFL-it configs only with `gfl_it` (a file)."""
    neogate_path = fetch(NEOGATE, source_dir)
    gente_path, gente_partial = _gente_source(source_dir)
    neogate = load_neogate(neogate_path)
    gente = load_gente(gente_path, gente_partial)
    gflit = load_gflit(Path(gfl_it)) if gfl_it is not None else None
    by_config = build_rows(neogate, gente, gflit, prompts_dir)
    default = "detection-neogate"
    files, infos, configs = config_files([(name, rows, features()) for name, rows in by_config.items()], default=default)
    header = {
        "pretty_name": "Gender-Fair Generation (CALAMITA 2024)",
        "language": ["it", "en"],
        "license": "cc-by-4.0",
        "multilinguality": "translation",
        "size_categories": ["1K<n<10K"],
        "source_datasets": ["FBK-MT/Neo-GATE", "FBK-MT/GeNTE"] + (["GFL-it"] if gflit is not None else []),
        "task_categories": ["text-generation", "translation", "token-classification"],
        "tags": ["gender-fair-language", "gender-neutral", "neomorphemes", "fairness", "italian", "calamita"],
        "version": VERSION,
        "configs": configs,
        "dataset_info": infos,
    }
    sources = [
        {"name": "Neo-GATE", "file": f"{NEOGATE.repo}/{NEOGATE.path}", "revision": NEOGATE.revision, "sha256": sha256_file(neogate_path), "pinned": True},
        {"name": "GeNTE", "file": f"{GENTE.repo}/{(GENTE_SET_N if gente_partial else GENTE).path}", "revision": GENTE.revision,
         "sha256": sha256_file(gente_path), "pinned": gente_partial},
    ]  # fmt: skip
    if gflit is not None:
        sources.append({"name": "GFL-it", "file": Path(gfl_it).name, "revision": "user file", "sha256": sha256_file(Path(gfl_it)), "pinned": False})
    card = render_card(
        "gfg.md.j2",
        yaml_header=yaml_header(header),
        version=VERSION,
        counts={name: len(rows) for name, rows in by_config.items()},
        missing=[c for c in CONFIGS if c not in by_config],
        gente_partial=gente_partial,
        sources=sources,
        fields=[(name, getattr(feature, "dtype", "list of string"), FIELD_NOTES[name]) for name, feature in features().items()],
        max_new_tokens=MAX_NEW_TOKENS,
        example=json.dumps({k: v for k, v in by_config[default][1].items() if k != "prompt"}, ensure_ascii=False, indent=2),
        example_prompt=by_config[default][1]["prompt"],
    )
    files["README.md"] = card.encode("utf-8")
    return write_dataset(out, files, force=force)


SPEC = TaskSpec(
    id="gfg",
    cli_name="gfg",
    version=VERSION,
    hub_repo="equita/gfg",
    title="Gender-Fair Generation (CALAMITA 2024)",
    configs=CONFIGS,
    group_by="set",
    build=build,
    metric=None,
)
