"""Smoke-run every numbered notebook with ``profile=paper`` on the stand-in hub (``make paper-smoke``).

Each notebook of ``notebooks/[0-9]*.ipynb`` (a glob: new notebooks join by themselves) runs through
``scripts/run_notebooks.py`` with the paper profile and small parameters (``SMOKE``; a notebook not listed there
gets only ``COMMON``), on CUDA when torch sees a GPU and on CPU otherwise, with results, figures and executed
notebooks in a temporary folder (``SPECDEC_OUTPUT_DIR``), never over the committed ones, and never standing on the
checkout's results (``SPECDEC_BASE_DIR``: an empty folder, whatever results/paper/ holds). Checks per notebook:
it ran to the end (after ``PREPARE``, the models no hub holds, trained at smoke settings), it appended rows to
``results/paper/`` (TABED 10-13: second turns among them), and the provenance of those rows names the paper's
model ids (the ids of ``paper.yaml``, or the multilingual drafters' folder), not the tiny zoo.
Before the multilingual notebooks (30-34), the drafter recipe at paper scale (``specdec.multilingual.hub_run``:
self-distillation from the paper target, P-F / F finetuning with the one training loop) runs with ``--smoke`` on
the same hub and writes the drafters those notebooks read (``SPECDEC_ML_DRAFTERS``, in the output folder).
``EXTRA_JOBS`` run a notebook again with other paper settings (notebook 10 with the LLaVA-NeXT pair of Table 11).
Last, one sweep (the CoS grid) runs serially and as 2 Ray shards on a local cluster: the rows must match.

Run it after ``make standin-hub`` (``HF_HOME`` must hold the stand-in cache, or the real one on a GPU machine):

    HF_HOME=.cache/standin-hub python scripts/paper_smoke.py [--only 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import yaml

from specdec import hub

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROFILE_FILE = ROOT / "data" / "profiles" / "paper.yaml"
COMMON = {"profile": "paper", "seed": 0}
# Small settings per notebook prefix: few prompts, few tokens, one repeat. Lists and dicts as the notebooks take them.
SMOKE: dict[str, dict] = {
    "00_": {"max_new_tokens": 8},
    "01_": {
        "pairs": ["default"],
        "n_per_kind": 1,
        "gammas": [1, 3],
        "max_new_tokens": 8,
        "latency_batch_sizes": [1],
        "latency_contexts": [16],
        "latency_gammas": [1, 2],
        "latency_repeats": 1,
        "speed_per_kind": 1,
        "speed_repeats": 1,
    },
    "02_": {"n_per_kind": 1, "runs": 1, "max_new_tokens": 16},
    "10_": {"n_per_scenario": 1, "n_ood": 1, "n_second": 1, "max_new_tokens": 6},
    "11_": {"n_per_scenario": 1, "n_ood": 1, "max_new_tokens": 6},
    "12_": {
        "n_per_scenario": 1,
        "n_ood": 1,
        "max_new_tokens": 6,
        "n_sweeps": 1,
        "windows": [1, "ALL"],
        "criteria": ["hard"],
        "divergences": ["kl"],
        "gammas": [1, 3],
        "gamma_methods": ["M", "MT*"],
    },
    "13_": {
        "n_per_scenario": 1,
        "n_ood": 1,
        "n_second": 1,
        "max_new_tokens": 7,
        "examples": ["describe-t1-paper-00000", "psv-t1-paper-00000", "iedit-t2-paper-00000"],
    },
    "14_": {
        "per_count": 1,
        "caption_repeats": 1,
        "fig9_tokens": 4,
        "fig9_repeats": 1,
        "step_repeats": 1,
        "tau_max_new_tokens": 4,
    },
    "20_": {"tasks": ["gsm8k", "humaneval"], "n_prompts": 1, "max_new_tokens": 8, "gammas": [1, 2]},  # every set
    "21_": {
        "tasks": ["gsm8k"],
        "n_prompts": 1,
        "max_new_tokens": 8,
        "lams": [0.3, 0.7],
        "mus": [0.1, 0.3],
        "gammas": [1, 2, 3],
        "mu_gammas": [1],
        "tradeoff_lams": [0.0, 0.4],
        "tradeoff_tasks": ["gsm8k"],
        "tradeoff_prompts": 1,
        "tradeoff_max_new_tokens": 8,
    },
    "22_": {"tasks": ["gsm8k"], "n_prompts": 1, "max_new_tokens": 8, "lams": [0.3, 0.7], "theory_gammas": [1, 3]},
    "30_": {"pairs": ["de", "zh"], "n_prompts": 1, "max_new_tokens": 8, "seeds": [0]},
    "31_": {"n_prompts": 1, "max_new_tokens": 8},
    "32_": {"drafter_langs": ["de"], "langs": ["en", "de"], "n_prompts": 1, "max_new_tokens": 8},
    "33_": {"n_prompts": 1, "max_new_tokens": 8, "seeds": [0]},
    "34_": {"pairs": ["de"], "n_prompts": 1, "max_new_tokens": 8},
}
SMOKE["40_"] = {"n_per_task": 1, "max_new_tokens": 6, "gammas": [3]}
SMOKE["41_"] = {"n_per_task": 1, "max_new_tokens": 6, "gammas": [3]}
# Notebooks whose TABED table must hold second-turn rows (turn 2 continues the target's own first answer), by table.
SECOND_TURNS = {"10_": "tabed_runs", "11_": "tabed_runs", "12_": "tabed_runs", "13_": "tabed_runs"}
# Extra runs of a notebook with other paper settings, after its own run: (prefix, job name, parameters over its
# SMOKE ones, model id its rows must name). The LLaVA-NeXT pair of Table 11 (any-resolution target, LLaVA draft).
EXTRA_JOBS = [
    ("10_", "llava-next", {"pair": "llava-next-7b", "methods": ["M", "MT*"]}, "llava-hf/llava-v1.6-vicuna-7b-hf"),
]
# Notebooks that only read other notebooks' tables (no model of their own): their rows carry no model ids.
READERS = ("90_",)
# Notebooks whose tables do not yet name their models, and why (checked for rows and a complete run only).
UNLABELLED: dict[str, str] = {}
# Notebooks the smoke run cannot run yet, and why (listed as skipped, never as passed).
SKIPPED: dict[str, str] = {}


# Models a notebook needs that no hub holds, trained by their paper-scale recipe at smoke settings before the first
# notebook that reads them, once per step: (name, arguments after ``python``, a file it must write or None), with
# ``{device}`` (the smoke device), ``{ml_drafters}`` ($SPECDEC_ML_DRAFTERS) filled in. The AASD modules and distilled
# baselines go to $SPECDEC_AASD_ZOO; the multilingual F / P-F drafters to $SPECDEC_ML_DRAFTERS.
AASD_RECIPE = (
    "AASD modules and distilled baselines",
    ["-m", "specdec.aasd.train", "paper", "--steps", "2", "--n", "2", "--max-new-tokens", "4", "--batch-size", "2",
     "--device", "{device}"],
    None,
)  # fmt: skip
ML_RECIPE = (
    "multilingual drafter recipe",
    ["-m", "specdec.multilingual.train", "--profile", "paper", "all", "--smoke", "--device", "{device}", "--out",
     "{ml_drafters}"],
    "{ml_drafters}/ml_training.csv",
)  # fmt: skip
# Notebooks that read the multilingual drafters.
ML_NOTEBOOKS = ("30_", "31_", "32_", "33_", "34_")
PREPARE = {"40_": AASD_RECIPE, "41_": AASD_RECIPE} | dict.fromkeys(ML_NOTEBOOKS, ML_RECIPE)


def prepare(step: tuple, env: dict, dev: str) -> list[str]:
    """Run one ``PREPARE`` step: problems (empty: fine)."""
    name, args, must_write = step
    fill = lambda text: text.format(device=dev, ml_drafters=env["SPECDEC_ML_DRAFTERS"])  # noqa: E731
    run = subprocess.run([sys.executable, *map(fill, args)], env=env, capture_output=True, text=True, cwd=ROOT)
    if run.returncode:
        return [f"the {name} failed:\n{run.stdout[-1500:]}{run.stderr[-1500:]}"]
    if must_write and not pathlib.Path(fill(must_write)).exists():
        return [f"the {name} wrote no {pathlib.Path(fill(must_write)).name}"]
    return []


def device() -> str:
    """The paper profile's device (``cuda``) where torch sees one, else ``cpu``: the stand-in runs anywhere."""
    import torch

    wanted = yaml.safe_load(PROFILE_FILE.read_text()).get("device", "cuda")
    return wanted if wanted != "cuda" or torch.cuda.is_available() else "cpu"


def smoke_env(out: pathlib.Path) -> dict:
    """The environment of every step: outputs under ``out`` and, as the read-only base layer of the stores, an
    empty ``out/base`` instead of the checkout's ``results/`` (whose git-ignored ``results/paper/`` may hold an
    earlier paper run with other columns)."""
    (out / "base").mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "SPECDEC_OUTPUT_DIR": str(out),
        "SPECDEC_BASE_DIR": str(out / "base"),
        "MPLBACKEND": "agg",
        "SPECDEC_AASD_ZOO": str(out / "aasd-zoo"),
    }


def paper_model_ids() -> set[str]:
    spec = yaml.safe_load(PROFILE_FILE.read_text())
    ids = {m for p in spec["pairs"].values() for m in (p["target"], p["draft"])}
    return ids | {m for c in spec["collab"].values() for m in c["models"]}


def parameters_for(notebook: pathlib.Path, dev: str, extra: dict | None = None) -> dict:
    """The notebook's smoke parameters (``COMMON``, its ``SMOKE`` entry, then ``extra``). A TABED ``pair`` needs
    nothing more: notebook 10 compares with that pair's own paper numbers (``tabed.tables.pair_setting``)."""
    from specdec.notebook_params import declared

    own = declared(notebook)  # COMMON's seed only where the notebook has one (the runner refuses undeclared names)
    params = {k: v for k, v in {**COMMON, "device": dev}.items() if k in own or k == "profile"}
    for prefix, more in SMOKE.items():
        if notebook.name.startswith(prefix):
            params.update(more)
    params.update(extra or {})
    return params


def provenance_lines(results: pathlib.Path) -> dict[pathlib.Path, int]:
    return {p: len(p.read_text().splitlines()) for p in results.glob("*.provenance.jsonl")}


def csv_rows(results: pathlib.Path) -> dict[pathlib.Path, int]:
    return {p: len(p.read_text().splitlines()) for p in results.glob("*.csv")}


def named_models(results: pathlib.Path, before: dict) -> set[str]:
    """Model names in the provenance lines appended since ``before`` (keys ``*_model``)."""
    names = set()
    for path, count in provenance_lines(results).items():
        for line in path.read_text().splitlines()[before.get(path, 0) : count]:
            names |= {str(v) for k, v in json.loads(line).items() if k.endswith("_model")}
    return names


def new_rows_text(results: pathlib.Path, before: dict) -> str:
    return "".join("".join(p.read_text().splitlines(True)[before.get(p, 0) :]) for p in results.glob("*.csv"))


def new_turns(path: pathlib.Path, before: dict) -> set[str]:
    """The ``turn`` values of the rows appended to ``path`` since ``before``."""
    import csv

    if not path.exists():
        return set()
    lines = path.read_text().splitlines(True)
    new = list(csv.DictReader([lines[0], *lines[max(1, before.get(path, 0)) :]]))
    return {row.get("turn", "") for row in new}


def check(notebook: pathlib.Path, results: pathlib.Path, rows_before: dict, prov_before: dict) -> list[str]:
    """Problems with what one notebook wrote (empty: fine): no new rows; no second-turn rows where the paper has
    them (``SECOND_TURNS``); rows whose provenance names models that are not the paper's; neither the rows nor
    their provenance naming a paper.yaml id."""
    grown = [p.name for p, n in csv_rows(results).items() if n > rows_before.get(p, 0)]
    if not grown:
        return ["wrote no rows under results/paper/"]
    table = next((t for prefix, t in SECOND_TURNS.items() if notebook.name.startswith(prefix)), None)
    if table and not any("2" in new_turns(p, rows_before) for p in results.glob(f"{table}*.csv")):
        return [f"wrote no second-turn rows to {table}*.csv"]
    if notebook.name.startswith(READERS + tuple(UNLABELLED)):
        return []
    names = named_models(results, prov_before)
    allowed = paper_model_ids()
    foreign = {n for n in names if n not in allowed and "specdec-ml-drafters" not in n}
    problems = [f"rows name models that are not paper.yaml's: {sorted(foreign)}"] if foreign else []
    text = new_rows_text(results, rows_before)
    if not names and not any(i in text for i in allowed):
        problems.append(f"neither the new rows of {grown} nor their provenance name a paper.yaml model id")
    return problems


# Columns that hold walltimes: the only ones a sharded run may change.
TIMING_COLUMNS = ["prefill_time", "total_time", "tokens_per_second"]


def ray_matches_serial(out: pathlib.Path, env: dict) -> list[str]:
    """One sweep (CoS Table 1 grid, one prompt per task) on the paper profile, serially and as 2 Ray shards on a
    local cluster: problems if the rows differ in anything but walltime (empty: the same rows)."""
    import pandas as pd

    frames = {}
    for executor in ("serial", "ray"):
        root = out / f"sharded-{executor}"
        run = subprocess.run(
            [sys.executable, "-m", "specdec.cos.experiments", "--profile", "paper", "--device", device(),
             "--n-prompts", "1", "--max-new-tokens", "8", "--executor", executor, "--shards", "2",
             "--results", str(root), "--out", str(root / "best.csv")],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        if run.returncode:
            return [f"the {executor} CoS grid failed:\n{run.stdout[-1500:]}{run.stderr[-1500:]}"]
        frame = pd.read_csv(root / "paper" / "cos_main.csv").drop(columns=TIMING_COLUMNS)
        frames[executor] = frame.sort_values(list(frame.columns)).reset_index(drop=True)
    if frames["serial"].empty:
        return ["the serial CoS grid wrote no rows"]
    if not frames["serial"].equals(frames["ray"]):
        return [f"Ray-sharded rows differ from the serial rows ({len(frames['ray'])} vs {len(frames['serial'])})"]
    return []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="notebooks whose name contains this (e.g. 2 or 20_)")
    ap.add_argument("--keep", type=pathlib.Path, help="write into this folder (kept) instead of a temporary one")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray-sharded vs serial sweep check")
    args = ap.parse_args(argv)
    if not os.environ.get("HF_HOME"):
        sys.exit("set HF_HOME to the stand-in cache (make paper-smoke does: .cache/standin-hub) or a real one")
    notebooks = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    notebooks = [nb for nb in notebooks if not args.only or args.only in nb.name]
    dev = device()
    with tempfile.TemporaryDirectory(prefix="paper-smoke-") as tmp:
        out = args.keep or pathlib.Path(tmp)
        results = out / "results" / "paper"
        results.mkdir(parents=True, exist_ok=True)
        env = smoke_env(out)
        env["SPECDEC_ML_DRAFTERS"] = str(out / "specdec-ml-drafters")  # trained below (PREPARE), before 30-34
        prepared: set[str] = set()
        if dev == "cpu":  # tiny models on a shared machine: one thread each is several times faster
            env |= {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        failures, start = {}, time.perf_counter()
        for nb in notebooks:
            skip = next((why for prefix, why in SKIPPED.items() if nb.name.startswith(prefix)), None)
            if skip:
                print(f"skip {nb.name}: {skip}", flush=True)
                continue
            step = next((step for prefix, step in PREPARE.items() if nb.name.startswith(prefix)), None)
            if step and step[0] not in prepared:
                prepared.add(step[0])
                t0 = time.perf_counter()
                problems = prepare(step, env, dev)
                print(f"{'ok  ' if not problems else 'FAIL'} {step[0]}, smoke-sized ({time.perf_counter() - t0:.0f} s)")
                if problems:
                    failures[step[0]] = problems
                    print("".join(f"     {p}\n" for p in problems), end="", flush=True)
            jobs = [("", {}, None)] + [(n, x, m) for prefix, n, x, m in EXTRA_JOBS if nb.name.startswith(prefix)]
            for job, extra, must_name in jobs:
                label = f"{nb.name} [{job}]" if job else nb.name
                params = out / f"{nb.stem}{'.' + job if job else ''}.params.yaml"
                params.write_text(yaml.safe_dump(parameters_for(nb, dev, extra)))
                rows_before, prov_before = csv_rows(results), provenance_lines(results)
                t0 = time.perf_counter()
                run = subprocess.run(
                    [sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), "--only", nb.name, "-f", str(params),
                     "--output-dir", str(out / ("notebooks-" + job if job else "notebooks"))],
                    env=env, capture_output=True, text=True,
                )  # fmt: skip
                problems = (
                    [f"did not run to the end:\n{run.stdout[-1500:]}{run.stderr[-1500:]}"] if run.returncode else []
                )
                problems = problems or check(nb, results, rows_before, prov_before)
                if not problems and must_name and must_name not in named_models(results, prov_before):
                    problems = [f"its rows' provenance does not name {must_name}"]
                print(f"{'ok  ' if not problems else 'FAIL'} {label} ({time.perf_counter() - t0:.0f} s)", flush=True)
                if problems:
                    failures[label] = problems
                    print("".join(f"     {p}\n" for p in problems), end="", flush=True)
        if not args.only and not args.no_ray:
            t0 = time.perf_counter()
            problems = ray_matches_serial(out, env)
            took = time.perf_counter() - t0
            print(f"{'ok  ' if not problems else 'FAIL'} CoS grid, paper profile: Ray shards == serial ({took:.0f} s)")
            if problems:
                failures["ray-sharding"] = problems
                print("".join(f"     {p}\n" for p in problems), end="", flush=True)
        skipped = [nb for nb in notebooks if nb.name.startswith(tuple(SKIPPED))]
        passed = len([nb for nb in notebooks if not any(f.startswith(nb.name) for f in failures) and nb not in skipped])
        print(f"paper smoke on {dev}: {passed}/{len(notebooks)} notebooks passed, {len(skipped)} skipped "
              f"in {time.perf_counter() - start:.0f} s (outputs in {out})")  # fmt: skip
        if hub.standin_cache():
            print("HF_HOME holds the stand-in hub: random weights, so every table and verdict above is meaningless")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
