"""Bad-input probes of issue 28, part 1: the engine, sampling and verification, CoS, TABED and ``specdec.validate``.

Every probe is a bad input with the clear error it must raise (``pytest.raises`` matching the message), or a legal
edge case with its correct result. Random tiny models only (one layer, 16 hidden units): the file runs in seconds.
The table of the issue counts these probes per area (see the closing note of issue 28).
"""

import math

import numpy as np
import pytest
import torch

from conftest import probe_llama
from specdec import validate, verify
from specdec.cos import Combination, contrastive, weighted_ensemble
from specdec.cos import algorithm as cos_algorithm
from specdec.cos import tables as cos_tables
from specdec.cos.algorithm import decode
from specdec.drafters import ModelDrafter
from specdec.engine import generate
from specdec.sampling import SamplingConfig
from specdec.tabed import algorithm as ensemble
from specdec.tabed.algorithm import DraftingRows, History, make_drafter

NAN, INF = math.nan, math.inf


@pytest.fixture(scope="module")
def draft():
    return probe_llama(1)


@pytest.fixture(scope="module")
def nan_target():
    """A target whose every logit is NaN (an fp16 overflow on a GPU looks like this)."""
    return probe_llama(2, nan="lm_head.weight")


PROMPT = torch.tensor([1, 5, 6, 7])


# ------------------------------------------------------------------------------------ engine.generate: arguments
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"gamma": 0}, ValueError, "gamma must be an integer >= 1"),
        ({"gamma": -3}, ValueError, "gamma must be an integer >= 1"),
        ({"gamma": 2.5}, ValueError, "gamma must be an integer"),
        ({"gamma": True}, ValueError, "gamma must be an integer"),
        ({"gamma": "5"}, ValueError, "gamma must be an integer"),
        ({"max_new_tokens": -1}, ValueError, "max_new_tokens must be an integer >= 0"),
        ({"max_new_tokens": 3.0}, ValueError, "max_new_tokens must be an integer"),
        ({"max_new_tokens": None}, ValueError, "max_new_tokens must be an integer"),
        ({"seed": "0"}, TypeError, "seed must be an integer"),
        ({"seed": 1.5}, TypeError, "seed must be an integer"),
        ({"sampling": {"temperature": 1.0}}, TypeError, "sampling must be a specdec.sampling.SamplingConfig"),
        ({"sampling": 0.7}, TypeError, "sampling must be a specdec.sampling.SamplingConfig"),
        ({"eos_token_id": -1}, ValueError, "eos_token_id must be token ids >= 0"),
        ({"eos_token_id": [2, -5]}, ValueError, "eos_token_id must be token ids >= 0"),
        ({"eos_token_id": 2.0}, ValueError, "eos_token_id must be a token id"),
        ({"eos_token_id": "2"}, ValueError, "eos_token_id must be a token id"),
        ({"eos_token_id": [True]}, ValueError, "eos_token_id must be a token id"),
        ({"stop_strings": ["x"]}, ValueError, "stop_strings need the tokenizer"),
        ({"stop_strings": [""]}, ValueError, "stop_strings must hold non-empty strings"),
        ({"stop_strings": 5}, TypeError, "stop_strings must be a string or a list"),
        ({"target_inputs": {"pixel_values": torch.zeros(1, 3, 32, 32)}}, ValueError, "text-only target"),
        ({"target_inputs": {"pixel_values": torch.full((1, 3, 4, 4), NAN)}}, ValueError, r"pixel_values'\] holds"),
        ({"drafter": "draft"}, TypeError, "drafter must be None, a draft model or a Drafter"),
    ],
)
def test_generate_refuses_bad_arguments(target, kwargs, error, match):
    with pytest.raises(error, match=match):
        generate(target, PROMPT, **{"max_new_tokens": 2, **kwargs})


@pytest.mark.parametrize(
    "prompt, match",
    [
        (torch.tensor([], dtype=torch.long), "the prompt is empty"),
        (torch.tensor([[1, 2], [3, 4]]), "prompt_ids must be one sequence"),
        (torch.tensor([1.0, 2.0]), "must be integer token ids"),
        (torch.tensor([1, 64]), "outside the target's vocabulary 0..63"),
        (torch.tensor([-2, 5]), "outside the target's vocabulary"),
        (torch.arange(1, 31), "exceeds the target's context of 32"),
        ("hello world", "got text 'hello world': encode it first"),
        ([1, [2, 3]], "must be a sequence of token ids"),
        ({"input_ids": [1, 2]}, "must be a sequence of token ids"),
    ],
)
def test_generate_refuses_bad_prompts(target, prompt, match):
    with pytest.raises((ValueError, TypeError), match=match):
        generate(target, prompt, max_new_tokens=4)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"eos_token_id": np.int64(2)},  # numpy ints are token ids
        {"eos_token_id": [np.int32(2), 3]},
        {"gamma": np.int64(3)},
        {"max_new_tokens": np.int64(3)},
        {"seed": np.int64(7)},
        {"max_new_tokens": 0},  # nothing asked, nothing decoded
    ],
)
def test_generate_accepts_integer_like_values(target, draft, kwargs):
    out = generate(target, PROMPT, draft, **{"max_new_tokens": 3, **kwargs})
    plain = generate(target, PROMPT, **{"max_new_tokens": 3, **kwargs})
    assert out.output_ids == plain.output_ids  # lossless whatever the integer's type


def test_stop_strings_as_one_str_stop_on_the_whole_string(target):
    class Letters:  # token i decodes to the i-th letter: "ab" appears only where token 0 is followed by token 1
        def decode(self, ids):
            return "".join(chr(ord("a") + i % 26) for i in ids)

    plain = generate(target, PROMPT, max_new_tokens=6, eos_token_id=[])
    text = Letters().decode(plain.output_ids)
    stop = text[2:4]  # a two-letter string of the output: decoding stops right after it, not at either letter
    out = generate(target, PROMPT, max_new_tokens=6, eos_token_id=[], stop_strings=stop, tokenizer=Letters())
    assert Letters().decode(out.output_ids).endswith(stop)
    assert stop in Letters().decode(out.output_ids) and out.stop_reason == "stop_string"


# ----------------------------------------------------------------------------- engine: non-finite logits, contracts
@pytest.mark.parametrize("drafter", [None, "draft"])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_nan_target_logits_stop_the_engine(nan_target, draft, drafter, temperature):
    with pytest.raises(FloatingPointError, match="logits at new token 0 hold NaN or inf"):
        generate(
            nan_target,
            PROMPT,
            draft if drafter else None,
            max_new_tokens=4,
            sampling=SamplingConfig(temperature=temperature),
        )


class OverProposer:
    """A drafter that ignores ``gamma`` (proposes ``extra`` more tokens than asked)."""

    calls = tokens_fed = 0
    vocab_size = 64

    def __init__(self, extra=2):
        self.extra = extra

    def prefill(self, prompt_ids, **inputs):
        pass

    def propose(self, generated, gamma, sampling, generator=None):
        k = gamma + self.extra
        return torch.full((k,), 3), torch.nn.functional.one_hot(torch.full((k,), 3), 64).float()

    def rollback(self, generated):
        pass


@pytest.mark.parametrize("extra", [1, 5])
def test_a_drafter_proposing_more_than_gamma_is_refused(target, extra):
    with pytest.raises(ValueError, match=r"proposed \d+ tokens for a block of at most"):
        generate(target, PROMPT, OverProposer(extra), gamma=2, max_new_tokens=6)


@pytest.mark.parametrize(
    "verdict, match",
    [
        (lambda d: (len(d) + 1, 3), "accepted 3 tokens of a block of 2"),
        (lambda d: (-1, 3), "accepted -1 tokens"),
        (lambda d: (0, 64), "next_token 64 is outside the vocabulary"),
        (lambda d: (0, -1), "next_token -1 is outside"),
        (lambda d: (0.5, 3), "n_accepted must be an integer"),
    ],
)
def test_a_verifier_breaking_its_contract_is_refused(target, draft, verdict, match):
    def verifier(draft_tokens, draft_probs, target_logits, sampling, generator):
        return verdict(draft_tokens)

    with pytest.raises((ValueError, TypeError), match=match):
        generate(target, PROMPT, draft, gamma=2, max_new_tokens=6, verifier=verifier)


# -------------------------------------------------------------------------------------------- sampling and verify
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"temperature": NAN}, "temperature"),
        ({"temperature": -INF}, "temperature"),
        ({"temperature": None}, "temperature"),
        ({"top_k": -1}, "top_k"),
        ({"top_k": 2.5}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_p": NAN}, "top_p"),
    ],
)
def test_sampling_config_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SamplingConfig(**kwargs)


@pytest.mark.parametrize(
    "logits",
    [
        torch.full((2, 8), NAN),  # argmax of an all-NaN row is 0: the old silent token 0
        torch.tensor([[0.0] * 7 + [INF], [0.0] * 8]),
        torch.full((2, 8), -INF),
    ],
)
def test_verify_greedy_refuses_non_finite_scores(logits):
    with pytest.raises(FloatingPointError, match="NaN or inf"):
        verify.greedy(torch.tensor([3]), logits)
    with pytest.raises(FloatingPointError, match="NaN or inf"):
        verify.greedy_prefix(torch.tensor([3, 4]), logits)


def test_verify_greedy_accepts_masked_minus_inf_logits():
    logits = torch.tensor([[-INF, 2.0, 1.0], [0.0, -INF, 5.0]])
    assert verify.greedy(torch.tensor([1]), logits) == (1, 2)


@pytest.mark.parametrize(
    "probs, match",
    [
        (torch.tensor([[0.5, 0.6]]), "rows must sum to one"),
        (torch.tensor([[1.5, -0.5]]), "negative or non-finite"),
        (torch.tensor([[NAN, 1.0]]), "negative or non-finite"),
        (torch.tensor([[1, 0]]), "floating-point"),
    ],
)
def test_check_probs_refuses(probs, match):
    with pytest.raises(ValueError, match=match):
        verify.check_probs(probs)


# ------------------------------------------------------------------------------------------------ CoS combination
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Combination("we", 2, weights=(NAN, NAN)), r"ensemble weights\[0\] must be a finite number"),
        (lambda: Combination("we", 2, weights=(0.5, NAN)), "must be a finite number"),
        (lambda: Combination("we", 2, weights=(INF, 0.0)), "must be a finite number"),
        (lambda: Combination("we", 2, weights=(0.7, 0.7)), "sum to one"),
        (lambda: Combination("we", 2, weights=(0.5, 0.3, 0.2)), "3 ensemble weights for 2 models"),
        (lambda: Combination("cd", 2, temperature=NAN), "finite"),
        (lambda: Combination("cd", 2, mu="0.1"), "mu must be a finite number"),
        (lambda: Combination("we", 2, temperature=0), "temperature must be > 0 for a weighted ensemble"),
        (lambda: Combination("wee", 2), r"unknown combination 'wee' \(did you mean 'we'\?\)"),
        (lambda: Combination("we", 1), "at least two models"),
        (lambda: Combination("we", True), "at least two models"),
        (lambda: Combination("cd", 3), "exactly two models"),
        (lambda: Combination.weighted(NAN), "λ must be a finite number"),
        (lambda: Combination.weighted(1.5), r"λ must be a finite number in \[0, 1\]"),
        (lambda: Combination.weighted(0.3, n_models=3), "3 models take 1/3 each"),
        (lambda: cos_algorithm.make_combination("we", 3, lam=0.9), "3 models take 1/3 each"),
        (lambda: weighted_ensemble([torch.tensor([0.5, 0.5])] * 2, [NAN, NAN]), "finite"),
        (lambda: weighted_ensemble([torch.tensor([0.5, 0.5])] * 2, "ab"), "list of numbers"),
        (lambda: contrastive(torch.zeros(4), torch.zeros(4), temperature=NAN), "temperature must be a finite"),
        (lambda: contrastive(torch.zeros(4), torch.zeros(4), mu=-1), "mu must be a finite number >= 0"),
        (lambda: contrastive(torch.zeros(4), torch.zeros(5)), "must share one vocabulary"),
    ],
)
def test_cos_combination_refuses(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_three_model_ensemble_at_the_default_lambda_is_uniform():
    combine = Combination.weighted(0.5, n_models=3)
    assert combine.weights is None and combine.n_models == 3


# ----------------------------------------------------------------------------------------------- CoS decoding
@pytest.mark.parametrize("method", ["cos", "naive", "sd", "standard"])
def test_cos_decode_checks_the_context_window(target, draft, method):
    with pytest.raises(ValueError, match="exceeds the target's context of 32"):
        decode([draft, target], torch.arange(1, 25), Combination.weighted(0.5), method, max_new_tokens=10)


@pytest.mark.parametrize("method", ["cos", "naive", "sd", "parallel"])
def test_cos_decode_checks_the_vocabulary(target, draft, method):
    with pytest.raises(ValueError, match="outside the target's vocabulary 0..63"):
        decode([draft, target], torch.tensor([1, 99]), Combination.weighted(0.5), method, max_new_tokens=3)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"method": "coss"}, ValueError, r"unknown method 'coss' \(did you mean 'cos'\?\)"),
        ({"combine": "we"}, TypeError, "combine must be a cos.Combination"),
        ({"default": 2}, ValueError, r"default proposer must be an integer in \[0, 1\]"),
        ({"default": -1}, ValueError, "default proposer"),
        ({"seed": "1"}, TypeError, "seed must be an integer"),
        ({"sampling": {"temperature": 1}}, TypeError, "sampling must be"),
        ({"max_new_tokens": -2}, ValueError, "max_new_tokens must be an integer >= 0"),
        ({"gammas": [1, 0]}, ValueError, "gamma must be an integer >= 1"),
        ({"gammas": [1]}, ValueError, "one proposal length per model"),
    ],
)
def test_cos_decode_refuses(target, draft, kwargs, error, match):
    args = {"method": "cos", "combine": Combination.weighted(0.5), "max_new_tokens": 3, **kwargs}
    method, combine = args.pop("method"), args.pop("combine")
    with pytest.raises(error, match=match):
        decode([draft, target], PROMPT, combine, method, **args)


def test_cos_decode_with_a_nan_model_stops(nan_target, draft):
    with pytest.raises(FloatingPointError, match="NaN or inf"):
        decode([draft, nan_target], PROMPT, Combination.weighted(0.5), "cos", max_new_tokens=3)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("12 / 0 = 3", 0.0),  # a division by zero is a wrong equation, not a crash
        ("05 + 3 = 8", 1.0),  # a leading zero is a number, not a syntax error
        ("2 + 2 = 4 and 3 * 3 = 10", 0.5),
        ("10 / 4 = 2", 0.0),
        ("8 / 4 = 2", 1.0),
        ("no equations here", None),
        ("__import__('os') 1 + 1 = 2", 1.0),  # only the digits and operators are ever read
        ("9" * 400 + " * " + "9" * 400 + " = 1", 0.0),
    ],
)
def test_equation_accuracy_is_safe(text, expected):
    got = cos_tables.equation_accuracy(text)
    assert (math.isnan(got) and expected is None) or got == expected


# ------------------------------------------------------------------------------------------------------- TABED
class _Tokenizer:
    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [3] * max(1, len(text) // 8)}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "MX"}, r"unknown TABED method 'MX' \(did you mean"),
        ({"method": "MT", "weights": [NAN, NAN]}, r"weights\[0\] must be a finite number"),
        ({"method": "MT", "weights": [0.5, INF]}, "must be a finite number"),
        ({"method": "MT", "weights": [0.5, 0.2, 0.3]}, "got 3 weights"),
        ({"method": "MT*", "grid_n": 0}, "grid_n must be an integer >= 1"),
        ({"method": "MT*", "grid_n": -2}, "grid_n must be an integer >= 1"),
        ({"method": "MT*", "grid_n": 2.5}, "grid_n must be an integer"),
        ({"method": "MT*", "weights": [0.5, 0.5]}, "adapts its weights at test time"),
        ({"method": "MTCP*", "temperature": NAN, "captioner": lambda x: []}, "temperature must be a finite number > 0"),
        ({"method": "MTCP*", "temperature": 0, "captioner": lambda x: []}, "temperature must be a finite number > 0"),
        ({"method": "MTCP*", "divergence": "kll", "captioner": lambda x: []}, r"did you mean 'kl'"),
        ({"method": "P", "pool": 1}, "pool must be an integer >= 2"),
        ({"method": "P", "pool": 0}, "pool must be an integer >= 2"),
        ({"method": "C"}, "needs a captioner"),
    ],
)
def test_tabed_make_drafter_refuses(draft, kwargs, match):
    args = dict(kwargs)
    method = args.pop("method")
    with pytest.raises((ValueError, TypeError), match=match):
        make_drafter(draft, method, _Tokenizer(), **args)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda h: ensemble.grid_weights(h, n=0), "grid_n must be an integer >= 1"),
        (lambda h: ensemble.grid_weights(h, criterion="hrd"), r"unknown criterion 'hrd' \(did you mean 'hard'\?\)"),
        (lambda h: ensemble.grid_weights(h, window=0), "window must be an integer >= 1"),
        (lambda h: ensemble.softmax_weights(h, temperature=NAN, m=2), "temperature must be a finite number > 0"),
        (lambda h: ensemble.softmax_weights(h, temperature=-1, m=2), "temperature must be a finite number > 0"),
        (lambda h: ensemble.softmax_weights(h, kind="js", m=2), "unknown divergence 'js'"),
        (lambda h: ensemble.divergence(torch.ones(2), torch.ones(2), "js"), "divergence must be 'kl' or 'tvd'"),
    ],
)
def test_tabed_policies_refuse(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(History())


@pytest.mark.parametrize("weights", [[NAN, NAN], [NAN], [0.5, NAN], "ab"])
def test_model_drafter_refuses_non_finite_mixture_weights(draft, weights):
    with pytest.raises((ValueError, TypeError), match="mixture weights"):
        ModelDrafter(draft, weights=weights)


def test_drafting_rows_refuse_an_unknown_method(draft):
    with pytest.raises(ValueError, match="drafting methods must be among"):
        DraftingRows(draft, ["M", "Q"], _Tokenizer())


# ---------------------------------------------------------------------------------------------- specdec.validate
@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: validate.integer("n", True), TypeError, "n must be an integer, got True"),
        (lambda: validate.integer("n", 2.0), TypeError, "n must be an integer"),
        (lambda: validate.integer("n", "3"), TypeError, "n must be an integer"),
        (lambda: validate.integer("n", 0, minimum=1), ValueError, "n must be an integer >= 1, got 0"),
        (lambda: validate.integer("n", 9, maximum=3), ValueError, "n must be an integer <= 3"),
        (lambda: validate.number("x", NAN), ValueError, "x must be a finite number, got nan"),
        (lambda: validate.number("x", INF), ValueError, "finite"),
        (lambda: validate.number("x", "1"), TypeError, "x must be a finite number"),
        (lambda: validate.number("x", 0, positive=True), ValueError, "x must be a finite number > 0"),
        (lambda: validate.number("x", torch.tensor([1.0, 2.0])), TypeError, "x must be a finite number"),
        (lambda: validate.choice("kind", "wee", ["we", "cd"]), ValueError, r"did you mean 'we'"),
        (lambda: validate.strings("s", [1]), ValueError, "non-empty strings"),
        (lambda: validate.name_part("table", "../x"), ValueError, "must stay inside its folder"),
        (lambda: validate.name_part("table", "a//b"), ValueError, "must stay inside its folder"),
        (lambda: validate.name_part("table", ""), ValueError, "non-empty name"),
    ],
)
def test_validate_refuses(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: validate.integer("n", np.int64(4), minimum=1), 4),
        (lambda: validate.integer("n", torch.tensor(3)), 3),
        (lambda: validate.number("x", np.float32(0.5)), 0.5),
        (lambda: validate.number("x", torch.tensor(0.25)), 0.25),
        (lambda: validate.strings("s", "ab"), ["ab"]),
        (lambda: validate.strings("s", None), []),
    ],
)
def test_validate_accepts_legal_values(call, expected):
    assert call() == expected
