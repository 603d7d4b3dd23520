"""Bad-input probes, round four (issue 45): unknown names that once read as "any value" (``None``), and the
notebook-facing callables of the declared public API (``tests/probe_coverage.py``) that had no probe. Each is a
hostile call with the one clear error it must raise (type and message), before anything is loaded or written."""

import pathlib
import re

import pandas as pd
import pytest
import torch

from specdec import (
    batch_ensemble,
    bench,
    cache,
    costs,
    drafters,
    engine_findings,
    hub,
    notebook_params,
    papers,
    plots,
    realmodel,
    sharding,
    validate,
    verdict,
)
from specdec.aasd import algorithm as aasd_algorithm
from specdec.aasd import experiments as aasd_experiments
from specdec.aasd import findings as aasd_findings
from specdec.aasd import tables as aasd_tables
from specdec.aasd import train as aasd_train
from specdec.cos import exactness as cos_exactness
from specdec.cos import experiments as cos_experiments
from specdec.cos import findings as cos_findings
from specdec.cos import seeds as cos_seeds
from specdec.cos import tables as cos_tables
from specdec.cos import tasks as cos_tasks
from specdec.cos import theory_verdicts as cos_theory
from specdec.cos import train as cos_train
from specdec.cos import zoo as cos_zoo
from specdec.multilingual import batches as ml_batches
from specdec.multilingual import drafter_verdicts as ml_drafter_verdicts
from specdec.multilingual import experiments as ml_experiments
from specdec.multilingual import findings as ml_findings
from specdec.multilingual import hub_run as ml_hub_run
from specdec.multilingual import parallel as ml_parallel
from specdec.multilingual import pooled as ml_pooled
from specdec.multilingual import recipe as ml_recipe
from specdec.multilingual import seeds as ml_seeds
from specdec.multilingual import tables as ml_tables
from specdec.results import ResultStore
from specdec.tabed import conditions as tabed_conditions
from specdec.tabed import experiments as tabed_experiments
from specdec.tabed import findings as tabed_findings
from specdec.tabed import latency as tabed_latency
from specdec.tabed import latency_findings as tabed_latency_findings
from specdec.tabed import seeds as tabed_seeds
from specdec.tabed import tables as tabed_tables
from specdec.tabed import windows as tabed_windows
from specdec.tabed import zoo as tabed_zoo

TABED = "10_tabed_benchmark.ipynb"
EMPTY = pathlib.Path(
    "/nonexistent/results-root"
)  # a results root without any table (never created: nothing is written)
UNKNOWN_PROFILE = (ValueError, r"unknown profile 'nope'; known profiles: \['paper', 'real', 'tiny'\]")
UNKNOWN_X = (ValueError, "unknown profile 'x'")
NOT_A_MODEL = (
    TypeError,
    r"model must be a torch model \(torch.nn.Module, e.g. specdec.zoo.models.load\(...\)\), got str 'x'",
)
NO_CONDITIONS = (FileNotFoundError, "proxy_conditions.csv")  # the measured conditions' table, named
NOT_A_STORE = (TypeError, "store must be a specdec.results.ResultStore, got str 'x'")

RAISES = {  # name: (call, error type, message pattern)
    "papers.vocabulary of an unknown parameter": (
        lambda: papers.vocabulary("methds"),
        ValueError,
        r"unknown parameter of the notebooks 'methds' \(did you mean 'methods'\?\)",
    ),
    "papers.vocabulary of another notebook's parameter": (
        lambda: papers.vocabulary("tasks", TABED),
        ValueError,
        f"unknown parameter of {TABED} 'tasks'.*choose one of .*'methods'",
    ),
    "papers.vocabulary of a name outside the names given": (
        lambda: papers.vocabulary("methods", names=["gamma"]),
        ValueError,
        r"unknown parameter of the notebooks 'methods'.*\['gamma'\]",
    ),
    "notebook_params.allowed of an unknown parameter": (
        lambda: notebook_params.allowed("criterias", "12_tabed_ablations.ipynb"),
        ValueError,
        r"unknown parameter of 12_tabed_ablations.ipynb 'criterias' \(did you mean 'criteria'\?\)",
    ),
    "notebook_params.allowed of a name the spec lacks": (
        lambda: notebook_params.allowed("gamma", spec={"gammas": "list"}),
        ValueError,
        r"unknown parameter of the notebooks 'gamma' \(did you mean 'gammas'\?\)",
    ),
    "notebook_params.allowed of an unknown notebook": (
        lambda: notebook_params.allowed("methods", "19_tabed.ipynb"),
        ValueError,
        r"unknown notebook '19_tabed.ipynb'.*choose one of \['00_quickstart.ipynb'",
    ),
    "notebook_params.parameter_names of an unknown notebook": (
        lambda: notebook_params.parameter_names("nope.ipynb"),
        ValueError,
        "unknown notebook 'nope.ipynb'",
    ),
    "papers.declared of a missing notebook": (
        lambda: papers.declared("notebooks/no_such.ipynb"),
        FileNotFoundError,
        "no_such.ipynb",
    ),
    "notebook_params.runs_on of an unknown profile": (
        lambda: notebook_params.runs_on("tny", TABED),
        ValueError,
        r"unknown profile 'tny' \(did you mean 'tiny'\?\): choose one of \['paper', 'real', 'tiny'\]",
    ),
    # a results folder without the measured conditions: the missing table named
    "aasd.a2_validity of a folder without results": (lambda: aasd_findings.a2_validity(EMPTY), *NO_CONDITIONS),
    "aasd.a5_table of a folder without results": (lambda: aasd_findings.a5_table(EMPTY), *NO_CONDITIONS),
    "aasd.a5_validity of a folder without results": (lambda: aasd_findings.a5_validity(EMPTY), *NO_CONDITIONS),
    "aasd.conditions of a folder without results": (lambda: aasd_findings.conditions("A2", EMPTY), *NO_CONDITIONS),
    "multilingual.m3_validity of a folder without results": (lambda: ml_findings.m3_validity(EMPTY), *NO_CONDITIONS),
    "tabed.t5_validity of a folder without results": (lambda: tabed_windows.t5_validity(EMPTY), *NO_CONDITIONS),
    "tabed.shipped_pair_t5 of a folder without results": (
        lambda: tabed_conditions.shipped_pair_t5(None, EMPTY),
        *NO_CONDITIONS,
    ),
    # unknown profiles, seeds and files of the studies' entry points
    "tabed.window_frames of an unknown profile": (lambda: tabed_windows.window_frames("nope"), *UNKNOWN_PROFILE),
    "tabed.recompute of an unknown profile": (
        lambda: tabed_experiments.recompute([], profile="nope"),
        *UNKNOWN_PROFILE,
    ),
    "tabed.stored_real_sizes of an unknown profile": (
        lambda: tabed_latency.stored_real_sizes("nope"),
        *UNKNOWN_PROFILE,
    ),
    "multilingual.recompute of an unknown profile": (
        lambda: ml_experiments.recompute([], profile="nope"),
        *UNKNOWN_PROFILE,
    ),
    "multilingual.seed_runs of an unknown profile": (
        lambda: ml_seeds.seed_runs("nope", 1, {}, gamma=1, max_new_tokens=1),
        *UNKNOWN_PROFILE,
    ),
    "multilingual.main_seed_runs of an unknown training seed": (
        lambda: ml_seeds.main_seed_runs("tiny", -1, {}, gamma=1, temperatures=[0.0], seeds=[0], max_new_tokens=1),
        ValueError,
        r"Multilingual training seed -1 is not one of this zoo's \(1, 2\)",
    ),
    "multilingual.hub_run.load_pair of a folder without data": (
        lambda: ml_hub_run.load_pair(EMPTY, "de", 8, 0),
        FileNotFoundError,
        "no self-distillation data for de under .*: run the distil step",
    ),
    "aasd.recompute of an unknown profile": (lambda: aasd_experiments.recompute([], profile="nope"), *UNKNOWN_PROFILE),
    "aasd.train.paper of an unknown profile": (lambda: aasd_train.paper("x", profile="nope"), *UNKNOWN_PROFILE),
    "aasd.experiment of a target the zoo lacks": (
        lambda: aasd_experiments.experiment(None, "tiny", "t", "no-such-target", [], ["AASD"], [1], 1),
        hub.ModelNotAvailableError,
        "no model directory at .*no-such-target",
    ),
    "cos.exactness.store of an unknown profile": (lambda: cos_exactness.store("nope"), *UNKNOWN_PROFILE),
    "cos.stored_gpu_table of an unknown profile": (lambda: cos_tables.stored_gpu_table("nope"), *UNKNOWN_PROFILE),
    "verdict.in_two_regimes_over_seeds of no seed": (
        lambda: verdict.in_two_regimes_over_seeds(None, {}, None, regime="x", machine="y"),
        ValueError,
        "over_seeds needs the frame of at least one training seed",
    ),
    "plots.save of a string": (
        lambda: plots.save("x", "never.png"),
        TypeError,
        r"fig must be a matplotlib Figure \(plt.subplots\(\)\[0\]\), got str 'x'",
    ),
    "cos.answer_correct of an unknown task": (
        lambda: cos_tables.answer_correct("gsm8", "The answer is 4.", {"answer": 4}),
        ValueError,
        r"unknown task 'gsm8' \(did you mean 'gsm8k'\?\)",
    ),
    "cos.at_defaults of a string": (
        lambda: cos_seeds.at_defaults("x", {}),
        TypeError,
        "params and defaults must be dicts",
    ),
    "multilingual.m1_rules of a negative temperature": (
        lambda: ml_drafter_verdicts.m1_rules(-1.0),
        ValueError,
        "temperature must be a finite number >= 0.0, got -1.0",
    ),
    "multilingual.EpochBatches of batch size 0": (
        lambda: ml_batches.EpochBatches(None, 0),
        ValueError,
        "batch_size must be an integer >= 1, got 0",
    ),
    "realmodel.package_revision of an empty entry": (
        lambda: realmodel.package_revision({}),
        ValueError,
        r"entry must be a packaged model's entry of a profile yaml \(with 'module'\), got \{\}",
    ),
    # the core: drafters, models, bench, costs, hub, sharding
    "costs.sd_speedup of negative tokens": (
        lambda: costs.sd_speedup(-1, 1, 1, costs.implied_regime("x", {"draft": 0.1}, "src")),
        ValueError,
        "new_tokens must be counts >= 0, got -1",
    ),
    "costs.sd_speedup without a regime": (
        lambda: costs.sd_speedup(10, 5, 20, None),
        TypeError,
        r"regime must be a specdec.costs.Regime \(e.g. implied_regime\(...\)\), got None",
    ),
    "plots.accepted_histogram of gamma 0": (
        lambda: plots.accepted_histogram([1], 0),
        ValueError,
        "gamma must be an integer >= 1, got 0",
    ),
    "plots.accepted_histogram of a count above gamma": (
        lambda: plots.accepted_histogram([1, 5], 3),
        ValueError,
        r"accepted_per_block holds counts in \[0, gamma = 3\], got \[1, 5\]",
    ),
    "tabed.paper_window_table of an unknown setting key": (
        lambda: tabed_tables.paper_window_table(draft_sise="68M"),
        ValueError,
        r"unknown setting key 'draft_sise' \(did you mean 'draft_size'\?\)",
    ),
    "tabed.paper_window_table of a draft size Table 3 lacks": (
        lambda: tabed_tables.paper_window_table(draft_size="1B"),
        ValueError,
        r"unknown draft size of Table 3 '1B': choose one of \['68M'\]",
    ),
    "validate.model of a state dict": (
        lambda: validate.model("draft", {"w": torch.zeros(1)}),
        TypeError,
        "draft must be a torch model .*, got dict",
    ),
    "cache.CachedLM of a string": (lambda: cache.CachedLM("x"), *NOT_A_MODEL),
    "cache.BatchedLM of a string": (lambda: cache.BatchedLM("x"), *NOT_A_MODEL),
    "drafters.BatchModelDrafter of a string": (lambda: drafters.BatchModelDrafter("x"), *NOT_A_MODEL),
    "bench.forward_latency of a string": (lambda: bench.forward_latency("x"), *NOT_A_MODEL),
    "bench.forward_latency of 0 repeats": (
        lambda: bench.forward_latency(torch.nn.Linear(2, 2), repeats=0),
        ValueError,
        "repeats must be an integer >= 1, got 0",
    ),
    "bench.latency_ratio of strings": (lambda: bench.latency_ratio("x", "x"), *NOT_A_MODEL),
    "bench.latency_grid of a string": (lambda: bench.latency_grid("x"), *NOT_A_MODEL),
    "bench.timed of a number": (
        lambda: bench.timed("cpu", 3),
        TypeError,
        "fn must be a callable of no argument .*, got int 3",
    ),
    "bench.pool_acceptance of a string": (
        lambda: bench.pool_acceptance("abc"),
        TypeError,
        "rows must be a list of dicts .acceptance_rows's rows., got str 'abc'",
    ),
    "bench.pool_acceptance of rows without counts": (
        lambda: bench.pool_acceptance([{"draft": "a", "gamma": 3}]),
        ValueError,
        r"rows must be acceptance_rows's rows, .* lacking \['accepted', 'drafted', 'new_tokens', 'target_calls'\]",
    ),
    "bench.summarize_speedup of no rows": (
        lambda: bench.summarize_speedup([], 5, 0.1),
        ValueError,
        "rows must be speedup_rows's rows, with the columns .*: got 0 rows",
    ),
    "drafters.Drafter instantiated": (lambda: drafters.Drafter(), TypeError, "Protocols cannot be instantiated"),
    "drafters.AdaptiveDrafter instantiated": (
        lambda: drafters.AdaptiveDrafter(),
        TypeError,
        "Protocols cannot be instantiated",
    ),
    "batch_ensemble.BatchEnsembleDrafter of no drafter": (
        lambda: batch_ensemble.BatchEnsembleDrafter([]),
        ValueError,
        "batched per-request drafters must be ModelDrafters of one class on one draft model",
    ),
    "costs.implied_regime of a negative cost": (
        lambda: costs.implied_regime("x", {"draft": -1.0}, "src"),
        ValueError,
        "Regime 'x' cost of 'draft' must be a finite number >= 0.0, got -1.0",
    ),
    "hub.profile_ids of a string": (
        lambda: hub.profile_ids("tiny"),
        TypeError,
        r"spec must be a profile's yaml as a dict \(yaml.safe_load of data/profiles/<name>.yaml\), got str 'tiny'",
    ),
    "sharding.shard of 0 shards": (lambda: sharding.shard([{"a": 1}], 0), ValueError, "need at least one shard, got 0"),
    "sharding.shard of a string": (
        lambda: sharding.shard("abc", 2),
        TypeError,
        "keys must be a list of dicts .*, got str 'abc'",
    ),
    "sharding.shard_store of an index past the count": (
        lambda: sharding.shard_store(ResultStore("tiny", "t", ["k"]), 3, 2),
        ValueError,
        r"shard index must be an integer in \[0, count\) and count >= 1, got 3 of 2",
    ),
    "sharding.shard_store of a path": (lambda: sharding.shard_store("x", 0, 1), *NOT_A_STORE),
    "sharding.merge into a string": (lambda: sharding.merge("x", [], []), *NOT_A_STORE),
    "sharding.harvest into a string": (lambda: sharding.harvest("x", []), *NOT_A_STORE),
    "sharding.provenance_lines of a string": (lambda: sharding.provenance_lines("x"), *NOT_A_STORE),
    "sharding.run_shard of a string": (lambda: sharding.run_shard("x", [], None, {}), *NOT_A_STORE),
    # the studies' stores, loaders and entry points
    "cos.zoo.store of an unknown profile": (lambda: cos_zoo.store("nope", "cos_runs"), *UNKNOWN_PROFILE),
    "multilingual.store of an unknown profile": (lambda: ml_experiments.store("nope", "t"), *UNKNOWN_PROFILE),
    "multilingual.latency_store of an unknown profile": (
        lambda: ml_experiments.latency_store("nope"),
        *UNKNOWN_PROFILE,
    ),
    "multilingual.trained_seeds of an unknown profile": (lambda: ml_seeds.trained_seeds("nope"), *UNKNOWN_PROFILE),
    "tabed.zoo.store of an unknown profile": (lambda: tabed_zoo.store("nope"), *UNKNOWN_PROFILE),
    "tabed.seed_frames of an unknown profile": (lambda: tabed_seeds.seed_frames("nope"), *UNKNOWN_PROFILE),
    "tabed.load_vlm_pair of an unknown pair": (
        lambda: tabed_zoo.load_vlm_pair("tiny", "nope"),
        ValueError,
        "profile 'tiny' has no LLaVA pair 'nope'",
    ),
    "tabed.pair_latency_ratio of an unknown pair": (
        lambda: tabed_tables.pair_latency_ratio("tiny", "nope"),
        ValueError,
        "profile 'tiny' has no LLaVA pair 'nope'",
    ),
    "tabed.tabed_expected_speedups of a negative latency ratio": (
        lambda: tabed_tables.tabed_expected_speedups(-1.0),
        ValueError,
        "block efficiency and T_q/T_p are >= 0, got .* and -1.0",
    ),
    "tabed.paper_group_table of an unknown method": (
        lambda: tabed_tables.paper_group_table(["M", "XX"]),
        ValueError,
        r"unknown method of the paper's tables 'XX': choose one of \[",
    ),
    "tabed.pair_paper_table of an unknown method": (
        lambda: tabed_tables.pair_paper_table(["MTT"]),
        ValueError,
        r"unknown method of the paper's tables 'MTT' \(did you mean 'MT'\?\)",
    ),
    "tabed.paper_tau of an unknown method": (
        lambda: tabed_latency.paper_tau(["XX"]),
        ValueError,
        "unknown method of the paper's tables 'XX'",
    ),
    "tabed.window_study of window 0": (
        lambda: tabed_windows.window_study("tiny", windows=(0,)),
        ValueError,
        "window must be an integer >= 1, got 0",
    ),
    "tabed.draft_seed_runs of training seed 0": (
        lambda: tabed_seeds.draft_seed_runs("tiny", 0),
        ValueError,
        r"draft training seeds > 0 exist for the tiny zoo only \(got 0, tiny\)",
    ),
    "cos.load_task of an unknown task": (
        lambda: cos_tasks.load_task("gsm8", 1),
        ValueError,
        "unknown task 'gsm8'; valid tasks: ",
    ),
    "cos.load_task of n 0": (lambda: cos_tasks.load_task("gsm8k", 0), ValueError, "n must be a positive int or None"),
    "cos.sweeps of an unknown task": (
        lambda: cos_experiments.sweeps(
            "tiny",
            tasks=["nope"],
            n_prompts=1,
            max_new_tokens=1,
            lams=[0.5],
            mus=[0.1],
            gammas=[1],
            mu_gammas=[1],
            tradeoff_lams=[0.5],
            tradeoff_tasks=["gsm8k"],
            tradeoff_prompts=1,
            tradeoff_gamma=1,
            tradeoff_max_new_tokens=1,
        ),
        ValueError,
        "unknown task 'nope'",
    ),
    "cos.mmlu_near_duplicates of 0 test rows": (
        lambda: cos_findings.mmlu_near_duplicates(0),
        ValueError,
        "n must be a positive int or None, got 0",
    ),
    "cos.train.model_seed of an unknown model": (
        lambda: cos_train.model_seed("cos-amatuer"),
        ValueError,
        r"unknown CoS model 'cos-amatuer' \(did you mean 'cos-amateur'\?\)",
    ),
    "cos.train.model_seed of a negative training seed": (
        lambda: cos_train.model_seed("cos-amateur", -1),
        ValueError,
        "train_seed must be an integer >= 0, got -1",
    ),
    "multilingual.recipe.model_seed of a negative training seed": (
        lambda: ml_recipe.model_seed("de", -1),
        ValueError,
        "train_seed must be >= 0, got -1",
    ),
    "multilingual.paper_value of an unknown claim": (
        lambda: ml_tables.paper_value("nope"),
        ValueError,
        "unknown paper claim 'nope'.*multilingual_claims.csv",
    ),
    "multilingual.pairs of an unknown source": (
        lambda: ml_parallel.pairs("djang", "de", "test"),
        ValueError,
        r"unknown source 'djang'; expected one of \('django', 'sphinx'\)",
    ),
    "multilingual.pairs of an unknown language": (
        lambda: ml_parallel.pairs("django", "xx", "test"),
        ValueError,
        "unknown language 'xx'",
    ),
    "multilingual.pairs of an unknown split": (
        lambda: ml_parallel.pairs("django", "de", "tst"),
        ValueError,
        "source 'django' has splits .*, not 'tst'",
    ),
    "aasd.make_drafter of an unknown draft": (
        lambda: aasd_experiments.make_drafter("XX", "t", None, None, None),
        ValueError,
        "unknown AASD draft 'XX': choose one of",
    ),
    "aasd.load_module of a missing folder": (
        lambda: aasd_algorithm.load_module("no/such/folder", None),
        FileNotFoundError,
        "no/such/folder/config.json",
    ),
}


@pytest.mark.parametrize("name", sorted(RAISES))
def test_a_bad_call_raises_one_clear_error(name):
    call, error, match = RAISES[name]
    with pytest.raises(error, match=match):
        call()


def test_legal_calls_keep_their_answers():
    """The checks above refuse only what is wrong: the legal neighbours of those calls still answer."""
    regime = costs.implied_regime("x", {"draft": 0.1}, "src")
    assert costs.sd_speedup(10, 5, 20, regime) > 1.0
    assert tabed_tables.paper_window_table().shape == tabed_tables.paper_window_table(draft_size="68M").shape
    assert plots.label("no such name") == "no such name"  # a name without a label is its own label
    assert sharding.shard([{"a": 1}, {"a": 2}], 2) == [[{"a": 1}], [{"a": 2}]]
    assert bench.pool_acceptance([]) == []
    assert cos_tables.answer_correct("cnndm", "x", {}) is None  # a task without an accuracy: None, as documented
    assert cos_tables.answer_correct("gsm8k", "The answer is 4.", {"answer": 4}) is True
    assert len(ml_drafter_verdicts.m1_rules(0.0)) == 4


def test_known_names_keep_their_answers():
    """A declared parameter without a vocabulary still takes any value (``None``); one with a vocabulary gets it."""
    assert papers.vocabulary("methods", TABED) >= {"M", "T", "MT"}
    assert papers.vocabulary("n_prompts") is None and notebook_params.allowed("seed", TABED) is None
    assert notebook_params.allowed("profile") == {"tiny", "real", "paper"}
    assert notebook_params.allowed("gamma", spec={"gamma": "int"}) is None  # a notebook outside notebooks/
    assert "methods" in notebook_params.parameter_names(TABED) and "tasks" not in notebook_params.parameter_names(TABED)
    assert notebook_params.runs_on("tiny", TABED) is None


# ------------------------------------------------------------------ a foreign frame where a table's rows belong
FOREIGN = pd.DataFrame({"unrelated": [1.0, 2.0]})
READS = {  # name: (call on FOREIGN, the column named)
    "plots.sweep_lines": (lambda f: plots.sweep_lines(f, "x", "y", "h"), "x"),
    "engine_findings.priced_speed_verdict": (lambda f: engine_findings.priced_speed_verdict(f, None), "method"),
    "engine_findings.sweep_frames": (lambda f: engine_findings.sweep_frames(f, f), "prompts"),
    "engine_findings.speed_frames": (lambda f: engine_findings.speed_frames(f, f, "d"), "draft"),
    "tabed.block_table": (lambda f: tabed_tables.block_table(f, ["M"]), "method"),
    "tabed.group_means": (lambda f: tabed_tables.group_means(f, ["M"]), "method"),
    "tabed.rest_table": (lambda f: tabed_tables.rest_table(f, {"a": "b"}, ["M"]), "turn"),
    "tabed.verdict_t1b_by_rest": (lambda f: tabed_findings.verdict_t1b_by_rest(f, {"a": "b"}), "turn"),
    "tabed.verdict_batch": (lambda f: tabed_latency_findings.verdict_batch(f, None, "cpu"), "T_q(m) / T_q(1)"),
    "tabed.verdict_caption": (lambda f: tabed_latency_findings.verdict_caption(f, None, "cpu"), "caption / prefill"),
    "tabed.verdict_components": (lambda f: tabed_latency_findings.verdict_components(f, "cpu"), "vision encoder"),
    "tabed.plot_batch_cost": (lambda f: tabed_latency_findings.plot_batch_cost(f, None), "T_q(m) / T_q(1)"),
    "multilingual.method_table": (lambda f: ml_tables.method_table(f, 3, {}, {}), "method"),
    "multilingual.quality_table": (lambda f: ml_tables.quality_table(f, {}), "temperature"),
    "multilingual.select": (lambda f: ml_tables.select(f, {}, 3, [0.0], [0], 8), "pair"),
    "multilingual.log_speed": (lambda f: ml_pooled.log_speed(f, "a", "b"), "tokens_per_second"),
    "multilingual.translatable_set": (lambda f: ml_experiments.translatable_set(f, None), "method"),
    "multilingual.m1_paper_regime": (lambda f: ml_findings.m1_paper_regime(f, 0.0), "method"),
    "cos.gamma_trend": (lambda f: cos_tables.gamma_trend(f, {}), "gamma"),
    "cos.theory_table": (lambda f: cos_tables.theory_table(f, {}), "method"),
    "cos.c3_sanity_verdict": (lambda f: cos_theory.c3_sanity_verdict(f), "alpha"),
    "cos.c3_verdict": (lambda f: cos_theory.c3_verdict(f), "set"),
    "aasd.runs": (lambda f: aasd_tables.runs(f, "t1"), "table"),
    "aasd.side_by_side": (lambda f: aasd_tables.side_by_side(f), "target"),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_a_foreign_frame_names_the_column_it_lacks(name):
    call, column = READS[name]
    with pytest.raises(ValueError, match=f"reads the column '{re.escape(column)}', which this frame lacks"):
        call(FOREIGN)
