"""Bad-input probes of the core modules (issue 45): the cost model, sampling and verification, the verdict library,
the result store's helpers, the hub's profile readers, drafters and the engine's wrappers. Each probe is a hostile
call with the one clear error it must raise (type and message), or a legal edge case with its correct result. What
is still unclear or wrong is listed in ``tests/test_probes_api.py`` (``KNOWN_UNCLEAR``, ``KNOWN_WRONG``)."""

import math
import pathlib

import numpy as np
import pandas as pd
import pytest
import torch

from specdec import bench, costs, drafters, engine, hub, results, sampling, tabledb, validate, verdict, verify
from specdec.sampling import SamplingConfig

NAN = math.nan
SAME = costs.same_size_regime()
HOLDING = verdict.Verdict("n", "c", 1.0, 0.5, 1.5, 3, verdict.HOLDS)


def _probs(rows: int, vocab: int = 4) -> torch.Tensor:
    return torch.full((rows, vocab), 1.0 / vocab)


RAISES = {  # name: (call, error type, message pattern)
    "sampling.logits_to_probs of NaN logits": (
        lambda: sampling.logits_to_probs(torch.tensor([NAN, 0.0]), SamplingConfig(temperature=1.0)),
        ValueError,
        r"logits hold 1 NaN / \+inf value\(s\) of 2",
    ),
    "sampling.logits_to_probs of +inf logits, greedy": (
        lambda: sampling.logits_to_probs(torch.tensor([[0.0, math.inf]]), SamplingConfig()),
        ValueError,
        "logits hold 1 NaN / [+]inf",
    ),
    "sampling.logits_to_probs of a row of -inf": (
        lambda: sampling.logits_to_probs(torch.full((2, 3), -math.inf), SamplingConfig(temperature=1.0)),
        ValueError,
        "a row with no finite entry",
    ),
    "sampling.logits_to_probs without a config": (
        lambda: sampling.logits_to_probs(torch.zeros(3), None),
        TypeError,
        "config must be a SamplingConfig",
    ),
    "sampling.logits_to_probs of a list": (
        lambda: sampling.logits_to_probs([0.0, 1.0], SamplingConfig()),
        TypeError,
        "logits must be a tensor",
    ),
    "sampling.check_scores of no vocabulary axis": (
        lambda: sampling.check_scores("logits", torch.zeros(2, 0)),
        ValueError,
        r"at least one entry, got shape \(2, 0\)",
    ),
    "drafters.mixing_probs of NaN logits": (
        lambda: drafters.mixing_probs(torch.tensor([NAN, 0.0]), SamplingConfig()),
        ValueError,
        "logits hold 1 NaN",
    ),
    "drafters.mixing_probs of a temperature instead of a config": (
        lambda: drafters.mixing_probs(torch.zeros(3), 1.0),
        TypeError,
        "sampling must be a SamplingConfig",
    ),
    "sampling.sample of NaN probabilities": (
        lambda: sampling.sample(torch.tensor([NAN, 0.5])),
        ValueError,
        "probs cannot be sampled .* non-negative, finite entries",
    ),
    "sampling.sample of a zero row": (
        lambda: sampling.sample(torch.zeros(1, 3)),
        ValueError,
        "probs cannot be sampled",
    ),
    "sampling.sample of an empty row": (
        lambda: sampling.sample(torch.zeros(0)),
        ValueError,
        r"at least one column, got \(0,\)",
    ),
    "sampling.argmax of a list": (lambda: sampling.argmax([1, 2]), TypeError, "scores must be a tensor"),
    "costs.Regime of a negative cost": (
        lambda: costs.Regime("x", {"draft": -1.0}),
        ValueError,
        r"Regime 'x' cost of 'draft' must be a finite number >= 0.0, got -1.0 \(in target decoding steps",
    ),
    "costs.Regime of a NaN verify cost": (
        lambda: costs.Regime("x", {"draft": 0.1}, verify=NAN),
        ValueError,
        "Regime 'x' verify must be a finite number > 0, got nan",
    ),
    "costs.Regime of costs that are a number": (
        lambda: costs.Regime("x", 0.5),
        TypeError,
        "costs must map a model to its cost",
    ),
    "validate.finite_tensor of a list": (
        lambda: validate.finite_tensor("x", [NAN]),
        TypeError,
        r"x must be a tensor, got list \[nan\]",
    ),
    "engine.pad_vocab of rows wider than the vocabulary": (
        lambda: engine.pad_vocab(torch.ones(2, 8), 4),
        ValueError,
        "have 8 columns, more than the target's vocabulary of 4",
    ),
    "hub.pinned_revision of a profile that is not a dict": (
        lambda: hub.pinned_revision("x", "a/b"),
        TypeError,
        "spec must be a profile's yaml as a dict",
    ),
    "hub.pinned_revision of revisions that are a list": (
        lambda: hub.pinned_revision({"revisions": ["a/b"]}, "a/b"),
        TypeError,
        "revisions must map a hub id to its commit",
    ),
    "hub.profile_datasets of a datasets entry that is a str": (
        lambda: hub.profile_datasets({"datasets": "x"}),
        TypeError,
        "datasets must be a list of",
    ),
    "hub.profile_models of a list": (lambda: hub.profile_models([]), TypeError, "spec must be a profile's yaml"),
    "verdict.bootstrap_ci of n_boot 0": (
        lambda: verdict.bootstrap_ci([1.0, 2.0], np.mean, n_boot=0),
        ValueError,
        "n_boot must be an integer >= 1",
    ),
    "verdict.sanity of a string": (lambda: verdict.sanity("x"), TypeError, "verdict must be a Verdict, got str"),
    "verdict.pooled_over_seeds of a string": (
        lambda: verdict.pooled_over_seeds("x", {}),
        TypeError,
        "pooled must be a Verdict",
    ),
    "verdict.over_seeds of no seeds": (
        lambda: verdict.over_seeds(lambda f: [], {}),
        ValueError,
        "at least one training seed",
    ),
    "verdict.seed_table of no seeds": (
        lambda: verdict.seed_table(lambda f: [], {}),
        ValueError,
        "at least one training seed",
    ),
    "verdict.per_request of a frame lacking its columns": (
        lambda: verdict.per_request(pd.DataFrame({"a": [1]}), "b", "c"),
        ValueError,
        "reads the column 'row'",
    ),
    "results.model_fingerprint of a string": (
        lambda: results.model_fingerprint("x"),
        TypeError,
        "must be a model",
    ),
    "results.model_provenance of a string": (
        lambda: results.model_provenance(target="x"),
        TypeError,
        "target must be a model",
    ),
    "results.proxy_conditions of a condition the file lacks": (
        lambda: results.proxy_conditions("nope"),
        ValueError,
        r"no 'nope' rows in .*proxy_conditions.csv; its conditions: \[",
    ),
    "results.paper_numbers of a path name": (
        lambda: results.paper_numbers("../../pyproject"),
        ValueError,
        "must stay inside",
    ),
    "results.require_tables of a path profile": (
        lambda: results.require_tables("../x", pathlib.Path("/nonexistent"), {"t": "10_x"}),
        ValueError,
        "must stay inside",
    ),
    "results.stale_rows of frames lacking the key": (
        lambda: results.stale_rows(pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [1]}), ["k"], ["a"]),
        ValueError,
        r"committed rows lack the key columns \['k'\]",
    ),
    "costs.priced_time of negative calls": (
        lambda: costs.priced_time({"draft": -3}, SAME),
        ValueError,
        "call counts are >= 0",
    ),
    "results.stratified_sample by a column the frame lacks": (
        lambda: results.stratified_sample(pd.DataFrame({"a": [1]}), ["b"]),
        ValueError,
        r"by \['b'\]: the frame has no such column",
    ),
    "hub.resolve of an int": (lambda: hub.resolve(3), TypeError, "zoo name, a hub id or a path, got int"),
    "hub.snapshot_dir of an unknown repo type": (
        lambda: hub.snapshot_dir("/nonexistent", "a/b", "spaces", "0" * 40),
        ValueError,
        "repo_type must be 'model' or 'dataset'",
    ),
    "drafters.BatchLookupDrafter of vocabulary 0": (
        lambda: drafters.BatchLookupDrafter(drafters.PromptLookupDrafter(), 0),
        ValueError,
        "vocab_size must be an integer >= 1",
    ),
    "validate.reads_frame of a frame lacking a column the function reads": (
        lambda: validate.reads_frame(lambda frame: frame.method)(pd.DataFrame({"a": [1]})),
        ValueError,
        r"<lambda> reads the column 'method', which this frame lacks \(it has \['a'\]\)",
    ),
    "costs.eq1_speedup of alpha 1.5": (lambda: costs.eq1_speedup(1.5, 3, 0.1), ValueError, r"in \[0, 1\], got 1.5"),
    "costs.expected_block_efficiency of a negative alpha": (
        lambda: costs.expected_block_efficiency(-0.1, 3),
        ValueError,
        "alpha lies in",
    ),
    "costs.expected_speedup of a negative latency ratio": (
        lambda: costs.expected_speedup(2.0, 3, -1.0),
        ValueError,
        "T_q/T_p are >= 0",
    ),
    "costs.priced_time of a model the regime lacks": (
        lambda: costs.priced_time({"zz": 3}, SAME),
        ValueError,
        r"prices no model 'zz': it prices \['draft'\]",
    ),
    "costs.speedup of a method using an unpriced model": (
        lambda: costs.speedup({"zz": 1}, {"target": 3}, SAME),
        ValueError,
        "prices no model 'zz'",
    ),
    "costs.paper_table6_regime of sizes Table 6 lacks": (
        lambda: costs.paper_table6_regime("3B"),
        ValueError,
        "Table 6 has no 68M draft on a 3B target",
    ),
    "costs.h100_regime of an unknown model": (
        lambda: costs.h100_regime("nope", "nope2", 3),
        ValueError,
        r"the H100 grid has no model \['nope', 'nope2'\]",
    ),
    "costs.implied_cost of a zero speedup": (lambda: costs.implied_cost(2.0, 0.0, 3), ValueError, "other than 0"),
    "costs.implied_cost of gamma 0": (lambda: costs.implied_cost(2.0, 1.5, 0), ValueError, "gamma >= 1"),
    "verify.stochastic of probabilities of another length": (
        lambda: verify.stochastic(torch.tensor([1, 2]), _probs(3), _probs(3), torch.Generator()),
        ValueError,
        r"draft_probs must have shape \[γ, V\] = \[2, 4\]",
    ),
    "verify.stochastic of NaN draft probabilities": (
        lambda: verify.stochastic(torch.tensor([1]), torch.full((1, 4), NAN), _probs(2), torch.Generator()),
        ValueError,
        "non-finite entries",
    ),
    "verify.stochastic of a token outside the vocabulary": (
        lambda: verify.stochastic(torch.tensor([9]), _probs(1), _probs(2), torch.Generator()),
        ValueError,
        r"must lie in \[0, 4\)",
    ),
    "verify.stochastic_prefix of target probabilities of another length": (
        lambda: verify.stochastic_prefix(torch.tensor([1, 2]), _probs(3), _probs(3), torch.Generator()),
        ValueError,
        "need draft_tokens",
    ),
    "sampling.argmax of an empty row": (lambda: sampling.argmax(torch.zeros(0)), ValueError, "empty"),
    "verdict.decide of an interval upside down": (lambda: verdict.decide(2.0, 1.0), ValueError, "low <= high"),
    "verdict.validity of an unknown level": (lambda: verdict.validity("maybe", "x"), ValueError, "yes"),
    "verdict.judged of an unknown level": (lambda: verdict.judged(HOLDING, "maybe", "w"), ValueError, "yes"),
    "verdict.judge_all of a finding without validity": (
        lambda: verdict.judge_all([HOLDING], {}),
        KeyError,
        r"no proxy validity for \['n'\]",
    ),
    "verdict.paired_difference of unpaired units": (
        lambda: verdict.paired_difference([1.0, 2.0], [1.0]),
        ValueError,
        "equally long",
    ),
    "verdict.paired_difference of 2-D units": (
        lambda: verdict.paired_difference([[1.0]], [[1.0]]),
        ValueError,
        "1-D",
    ),
    "verdict.chi2_pvalue of counts and cells of two lengths": (
        lambda: verdict.chi2_pvalue([1, 2, 3], [0.5, 0.5]),
        ValueError,
        "equally long",
    ),
    "verdict.chi2_pvalue of a negative count": (
        lambda: verdict.chi2_pvalue([-1, 2], [0.5, 0.5]),
        ValueError,
        "observed must be finite and >= 0",
    ),
    "verdict.chi2_pvalue of NaN probabilities": (
        lambda: verdict.chi2_pvalue([1, 2], [NAN, 0.5]),
        ValueError,
        "probs must be finite",
    ),
    "verdict.total_variation of two lengths": (
        lambda: verdict.total_variation([1, 2, 3], [0.5, 0.5]),
        ValueError,
        "equally long",
    ),
    "results.check_key of no column": (lambda: results.check_key([]), ValueError, "at least one key column"),
    "results.check_key of a repeated column": (lambda: results.check_key(["a", "a"]), ValueError, "distinct"),
    "results.paper_numbers of an unknown table": (
        lambda: results.paper_numbers("no_such_table"),
        FileNotFoundError,
        "no_such_table.csv",
    ),
    "validate.numbers_list of a string": (lambda: validate.numbers_list("x", "abc"), TypeError, "list of numbers"),
    "validate.numbers_list holding NaN": (lambda: validate.numbers_list("x", [1.0, NAN]), ValueError, r"x\[1\]"),
    "validate.finite_tensor of NaN": (
        lambda: validate.finite_tensor("x", torch.tensor([NAN])),
        ValueError,
        "non-finite",
    ),
    "validate.model_inputs of a list": (
        lambda: validate.model_inputs("target_inputs", [1]),
        TypeError,
        "must be a dict",
    ),
    "validate.model_inputs of NaN pixels": (
        lambda: validate.model_inputs("target_inputs", {"pixel_values": torch.tensor([NAN])}),
        ValueError,
        "non-finite",
    ),
    "validate.draft_scores of NaN logits": (
        lambda: validate.draft_scores(torch.tensor([[NAN, 0.0]])),
        FloatingPointError,
        "the draft's logits hold NaN",
    ),
    "hub.download in offline mode": (lambda: hub.download({}), hub.HubUnreachableError, "offline"),
    "hub.load_dataset of a dataset not cached": (
        lambda: hub.load_dataset("nobody/nothing", None, "test"),
        hub.DatasetNotAvailableError,
        "cannot load dataset 'nobody/nothing'",
    ),
    "drafters.PromptLookupDrafter of min_ngram > max_ngram": (
        lambda: drafters.PromptLookupDrafter(max_ngram=1, min_ngram=3),
        ValueError,
        "min_ngram <= max_ngram",
    ),
    "drafters.PromptLookupDrafter of max_ngram 0": (
        lambda: drafters.PromptLookupDrafter(max_ngram=0),
        ValueError,
        "min_ngram <= max_ngram",
    ),
    "drafters.batch_drafter of a string": (lambda: drafters.batch_drafter("x", 64), ValueError, "batch size 1"),
    "engine.as_drafter of a string": (lambda: engine.as_drafter("draft"), TypeError, "drafter must be None"),
    "engine.as_target_lm of a string": (lambda: engine.as_target_lm("target"), TypeError, "target must be"),
    "engine.autoregressive of a string target": (
        lambda: engine.autoregressive("target", torch.tensor([1, 2])),
        TypeError,
        "target must be",
    ),
    "bench.iid_acceptance of tau above gamma + 1": (lambda: bench.iid_acceptance(9.0, 3), ValueError, r"\[1, 4\]"),
    "bench.iid_acceptance of tau below 1": (lambda: bench.iid_acceptance(0.5, 3), ValueError, r"\[1, 4\]"),
    "bench.describe_device of an unknown device": (lambda: bench.describe_device("nope"), RuntimeError, "cpu"),
}

RETURNS = {  # name: (call, check of the result)
    "costs.priced_time of a NaN count (a partial table) is NaN": (
        lambda: costs.priced_time({"draft": NAN}, SAME),
        math.isnan,
    ),
    "validate.reads_frame leaves an error about no missing column as it is": (
        lambda: _raised(lambda: validate.reads_frame(lambda frame: {}["x"])(pd.DataFrame({"x": [1]}))),
        lambda r: type(r) is KeyError,
    ),
    "costs.eq1_speedup of NaN (no data) is NaN": (lambda: costs.eq1_speedup(NAN, 3, 0.1), math.isnan),
    "costs.expected_block_efficiency of alpha 1 is gamma + 1": (
        lambda: costs.expected_block_efficiency(1.0, 3),
        lambda r: r == 4.0,
    ),
    "costs.same_size_regime prices every model at 1": (
        lambda: costs.same_size_regime(("a", "b")),
        lambda r: r.costs == {"a": 1.0, "b": 1.0} and r.verify == 1.0,
    ),
    "costs.priced_time of arrays": (
        lambda: costs.priced_time({"target": np.array([1.0, 2.0])}, SAME),
        lambda r: list(r) == [1.0, 2.0],
    ),
    "results.format_value of NaN": (lambda: results.format_value(NAN), lambda r: r == "nan"),
    "results.key_text of -0.0 is that of 0": (lambda: results.key_text(-0.0), lambda r: r == results.key_text(0)),
    "results.stratified_sample of n 0 is empty": (
        lambda: results.stratified_sample(pd.DataFrame({"a": [1]}), ["a"], n=0),
        lambda r: r.empty,
    ),
    "results.require_tables of an empty folder names make reproduce": (
        lambda: _raised(lambda: results.require_tables("tiny", pathlib.Path("/nonexistent"), {"t": "10_x"})),
        lambda r: isinstance(r, results.MissingResults) and "make reproduce PROFILE=tiny" in str(r),
    ),
    "tabledb.float_text of NaN": (lambda: tabledb.float_text(NAN), lambda r: r == "nan"),
    "tabledb.render of None is the empty cell": (lambda: tabledb.render(None), lambda r: r == ""),
    "tabledb.csv_lines quotes a line break": (lambda: tabledb.csv_lines([["a\nb"]]), lambda r: r == b'"a\nb"\r\n'),
    "verdict.bootstrap_ci of no units is NaN": (
        lambda: verdict.bootstrap_ci([], np.mean),
        lambda r: all(math.isnan(x) for x in r),
    ),
    "verdict.paired_difference of no units is NaN": (
        lambda: verdict.paired_difference([], []),
        lambda r: all(math.isnan(x) for x in r),
    ),
    "verdict.decide of a NaN bound is inconclusive": (
        lambda: verdict.decide(NAN, 1.0),
        lambda r: r == verdict.INCONCLUSIVE,
    ),
    "verdict.chi2_pvalue of no draws is NaN": (lambda: verdict.chi2_pvalue([0, 0], [0.5, 0.5]), math.isnan),
    "verdict.complete_seeds of no seeds": (lambda: verdict.complete_seeds({}, ["a"]), lambda r: r == ({}, {})),
    "verdict.seed_verdicts of no seeds": (lambda: verdict.seed_verdicts(lambda f: [], {}), lambda r: r == {}),
    "verdict.sanity marks a sanity check": (
        lambda: verdict.sanity(HOLDING),
        lambda r: r.section == verdict.SANITY and r.status == verdict.HOLDS,
    ),
    "hub.pinned_revision of an id the profile does not pin": (
        lambda: hub.pinned_revision({}, "a/b"),
        lambda r: r is None,
    ),
    "hub.profile_models of an empty profile": (lambda: hub.profile_models({}), lambda r: r == []),
    "hub.profile_dataset_ids of an empty profile": (lambda: hub.profile_dataset_ids({}), lambda r: r == []),
    "hub.missing of an empty profile": (lambda: hub.missing({}), lambda r: r == []),
    "hub.paper_revision of an id the paper profile lacks": (
        lambda: hub.paper_revision("nobody/nothing"),
        lambda r: r is None,
    ),
    "hub.cached_commit of an id not cached": (lambda: hub.cached_commit("nobody/nothing"), lambda r: r is None),
    "hub.hub_reachable offline": (lambda: hub.hub_reachable(0.01), lambda r: r is False),
    "drafters.lookup of gamma 0 proposes nothing": (lambda: drafters.lookup([1, 2, 1], 0), lambda r: r == []),
    "drafters.lookup of an empty context proposes nothing": (lambda: drafters.lookup([], 3), lambda r: r == []),
    "drafters.lookup proposes what followed the last match": (
        lambda: drafters.lookup([1, 2, 3, 1], 2),
        lambda r: r == [2, 3],
    ),
    "engine.eos_ids without a model or an id": (lambda: engine.eos_ids(None, None), lambda r: r == set()),
    "engine.pad_vocab pads a narrower draft": (
        lambda: engine.pad_vocab(torch.ones(2, 3), 5),
        lambda r: r.shape == (2, 5) and float(r[:, 3:].abs().sum()) == 0.0,
    ),
    "costs.Regime of a free draft": (lambda: costs.Regime("pld", {"draft": 0.0}).cost("draft"), lambda r: r == 0.0),
    "validate.finite_tensor of None or integers passes": (
        lambda: (validate.finite_tensor("x", None), validate.finite_tensor("x", torch.tensor([1]))),
        lambda r: r == (None, None),
    ),
    "sampling.logits_to_probs of -inf entries (masked tokens)": (
        lambda: sampling.logits_to_probs(torch.tensor([0.0, -math.inf]), SamplingConfig(temperature=1.0)),
        lambda r: r.tolist() == [1.0, 0.0],
    ),
    "sampling.logits_to_probs of integer logits": (
        lambda: sampling.logits_to_probs(torch.tensor([1, 2]), SamplingConfig(temperature=1.0)),
        lambda r: r.dtype == torch.float32 and torch.allclose(r.sum(), torch.tensor(1.0)),
    ),
}


def _raised(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 (the probe inspects it)
        return error
    return None


@pytest.mark.parametrize("name", sorted(RAISES))
def test_a_bad_call_raises_one_clear_error(name):
    call, error, match = RAISES[name]
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_a_legal_edge_case_gives_the_correct_result(name):
    call, check = RETURNS[name]
    assert check(call())
