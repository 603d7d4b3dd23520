"""The summary files of a multilingual zoo run (``zoo_run.train_all``, ``zoo_retrain``): ``ml_training.csv`` (one
row per model, its held-out metrics flattened into columns) and ``ml_run.json`` (configuration, timings, sizes).
"""

from __future__ import annotations

import csv
import json
import pathlib

from specdec.multilingual.recipe import BUDGET_LANG, MIXES, SIZES


def write_summary(run, data: dict, distil_stats: dict, seconds_total: float, summary_dir=None, extra=None):
    """Of the ``zoo_run.Run`` ``run``: ``ml_training.csv`` (one row per model name) and ``ml_run.json``
    (configuration, timings, sizes) in ``summary_dir`` (default the models directory). ``extra``: more
    ``ml_run.json`` entries."""
    out_dir, rows = run.out_dir, run.rows
    summary_dir = pathlib.Path(summary_dir or out_dir)
    saved = [r["model"] for r in rows if not r.get("same_as")]
    weights = {m: (out_dir / m / "model.safetensors").stat().st_size for m in saved}
    dirs = {m: sum(p.stat().st_size for p in (out_dir / m).iterdir()) for m in saved}
    write_csv(summary_dir / "ml_training.csv", rows)
    distilled_jsonl = out_dir / "ml_distilled.jsonl"
    summary = {
        "device": run.device_name,
        "steps_scale": run.steps_scale,
        "langs": run.langs,
        "prompts_per_set": run.prompts_per_set,
        "config": run.cfg,
        "sizes": SIZES,
        "mixes": MIXES,
        "fig4_grid": {BUDGET_LANG: [len(s) for s in run.grid(BUDGET_LANG)]} if BUDGET_LANG in run.langs else {},
        "distilled": distil_stats,
        "seconds_total": round(seconds_total, 1),
        "phase_seconds": {k: round(v, 1) for k, v in run.phases.items()},
        "weights_bytes_total": sum(weights.values()),
        "model_dirs_bytes_total": sum(dirs.values()),
        "distilled_jsonl_bytes": distilled_jsonl.stat().st_size if distilled_jsonl.exists() else None,
        "weights_bytes": weights,
        "data_meta": data["meta"],
        **(extra or {}),
    }
    (summary_dir / "ml_run.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(
        f"{len(rows)} models, float16 weights {sum(weights.values()) / 1e6:.2f} MB "
        f"(model directories with tokenizer files {sum(dirs.values()) / 1e6:.2f} MB), "
        f"{summary['seconds_total']:.0f} s on {run.device_name}",
        flush=True,
    )


def write_csv(path: pathlib.Path, rows: list[dict]) -> None:
    """``ml_training.csv``: one row per model, its held-out metrics flattened into columns."""
    flat = []
    for r in rows:
        row = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
        for k, v in (r.get("heldout_general") or {}).items():
            row[f"loss_{k}"] = v
        for k, v in (r.get("heldout_summary") or {}).items():
            row[k] = v
        for key, m in (r.get("heldout_xx_en") or {}).items():
            row[f"agree_{key}"] = m["agree"]
            row[f"loss_{key}"] = m["loss"]
        flat.append(row)
    header: list[str] = []
    for row in flat:
        header += [k for k in row if k not in header]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(flat)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
