"""Measuring the multilingual specialised drafters (Yi et al.): translation prompts, every SD method side by
side with plain decoding, the paper's tables and the findings M1–M4.

Methods (``METHODS``) all decode with the same target, so at T = 0 they must give the very tokens of plain
(autoregressive) decoding — ``run_grid`` asserts it — and at T = 1 they sample from the same distribution:

- ``ar``: plain decoding (the baseline), ``sps-generic``: SpS with the generic drafter (like vicuna-68m),
- ``sps-f`` / ``sps-pf``: SpS with the pair's finetune-only (F) / pretrain-and-finetune (P-F) drafter,
- ``pld``: prompt lookup decoding (n-gram copy from the context, no model).

Medusa, EAGLE and Lookahead are not built here (``NOT_BUILT`` says why); tables show them as such.

Block efficiency τ (new tokens per target call, bonus token counted; the paper's "acceptance length") is
hardware-independent and carries the findings. Speed is reported two ways: the expected speedup
``τ / (γ · T_q/T_p + 1)`` from the measured τ and the draft/target one-token call-time ratio, and the measured
side-by-side walltime ratio (every method of one prompt runs back to back; median over prompts of
tokens/s ratios), named with its device. Prompts are ``[<s>] + prompt ids`` of ``parallel.direction_prompt``.
"""

from __future__ import annotations

import functools
import os
import pathlib
import random
import zlib

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from specdec import bench, results, validate, zoo
from specdec.drafters import PromptLookupDrafter
from specdec.engine import generate
from specdec.hub import ModelNotAvailableError
from specdec.multilingual import hubdata, parallel
from specdec.sampling import SamplingConfig
from specdec.zoo.models import load, load_profile, load_tokenizer, profile_device, revision_of, weights_identity
from specdec.zoo.models import weights_digest as combine_weights
from specdec.zoo.tasks import encode, text_digest

LANGS = tuple(parallel.LANGUAGES)  # de fr ru ja zh
METHODS = ("ar", "sps-generic", "sps-f", "sps-pf", "pld")
METHOD_LABELS = {
    "ar": "autoregressive",
    "sps-generic": "SpS (generic drafter)",
    "sps-f": "SpS + F drafter",
    "sps-pf": "SpS + P-F drafter (ours)",
    "pld": "PLD (prompt lookup)",
}
NOT_BUILT = {
    "Medusa": "not built: needs extra decoding heads trained on the target and tree attention in the engine",
    "EAGLE": "not built: needs a feature-level autoregressive head on the target's hidden states and tree drafts",
    "Lookahead": "not built: needs Jacobi-iteration n-gram pools (a different decoding loop)",
}
# every parameter that changes a row, the device included (rows carry walltimes)
# and ``weights``, a digest of the target's and the method's drafter's weights (``weights_digest``): a retrained model
# never reuses the rows of the one it replaces; ``request``, the ``text_digest`` of the prompt's text: a prompt id
# that names another text (a new prompt template) is computed again
KEYS = [
    "pair", "source", "gamma", "max_new_tokens", "temperature", "seed", "device", "prompt", "request", "method",
    "weights",
]  # fmt: skip
GREEDY_SEED = 0  # T = 0 runs are deterministic: one "seed" only

TRAIN_COMMAND = "python -m specdec.multilingual.train --profile paper all --out $SPECDEC_ML_DRAFTERS"
# Which models the zoo names (ml-target, ml-draft-*) stand for: set by ``use_profile`` (tiny by default).
_PROFILE: dict = {"profile": "tiny", "device": "cpu", "dtype": None}


def paper_setup() -> dict:
    """The paper profile's evaluation sets and prompt (``multilingual`` in ``data/profiles/paper.yaml``)."""
    return load_profile("paper")["multilingual"]


def drafter_name(method: str, lang: str) -> str | None:
    """The zoo model behind a method for a pair X → En (``None`` for ``ar`` and ``pld``)."""
    validate.choice("multilingual method", method, METHODS)
    return {"sps-generic": "ml-draft-generic", "sps-f": f"ml-draft-f-{lang}", "sps-pf": f"ml-draft-pf-{lang}"}.get(
        method
    )


def use_profile(profile: str = "tiny", device=None, dtype=None) -> None:
    """Bind the zoo names of this module to a profile's models, on its device and dtype (call once per notebook).

    tiny: the shipped ``ml-*`` zoo on CPU (float32). paper: ``ml-target`` is the target of ``paper.yaml``'s
    ``multilingual`` pair (Vicuna-7B v1.3), ``ml-draft-generic`` its draft (vicuna-68m), and every other ``ml-*``
    drafter a ``save_pretrained`` directory of that name in ``drafters_dir()`` (F / P-F drafters trained for the
    Vicuna tokenizer; none is published). Device and dtype default to the profile's (``paper.yaml``: cuda,
    float16); tensors then live on that device, so the ``device`` of each row names where it ran.
    """
    if profile not in ("tiny", "paper"):
        raise ValueError(f"unknown profile {profile!r}; expected 'tiny' or 'paper'")
    spec = load_profile(profile)
    device, dtype = profile_device(spec, device, dtype)
    _PROFILE.update(profile=profile, device=str(device), dtype=None if profile == "tiny" else dtype)
    load_model.cache_clear()
    tokenizer.cache_clear()
    weights_digest.cache_clear()


def drafters_dir() -> pathlib.Path:
    """Where the paper profile looks for its trained ``ml-*`` drafters: ``$SPECDEC_ML_DRAFTERS``, else
    ``$HF_HOME/specdec-ml-drafters``."""
    default = pathlib.Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "specdec-ml-drafters"
    return pathlib.Path(os.environ.get("SPECDEC_ML_DRAFTERS", default))


def model_source(name: str) -> str:
    """The id or directory a zoo name stands for under the active profile (``use_profile``)."""
    if _PROFILE["profile"] == "tiny":
        return name
    pair = load_profile("paper")["pairs"]["multilingual"]
    if name in ("ml-target", "ml-draft-generic"):
        return pair["target" if name == "ml-target" else "draft"]
    path = drafters_dir() / name
    if not (path / "config.json").exists():
        raise ModelNotAvailableError(
            f"paper profile: no drafter {name!r} at {path}. The F / P-F drafters are trained per language pair "
            f"by the paper-scale recipe ({TRAIN_COMMAND}, README 'Paper profile'), which saves them there; or set "
            "SPECDEC_ML_DRAFTERS to the folder that holds them."
        )
    return str(path)


@functools.cache
def load_model(name: str):
    """The model a zoo name stands for under the active profile, in eval mode, cached: drafters are shared by
    many cells (tiny: float32 on CPU; paper: see ``use_profile``)."""
    source = model_source(name)
    if _PROFILE["profile"] == "tiny":
        return load(name, with_tokenizer=False)[0]
    revision = revision_of(load_profile("paper"), source)
    return load(source, device=_PROFILE["device"], dtype=_PROFILE["dtype"], with_tokenizer=False, revision=revision)[0]


def _weights_identity(name: str) -> str:
    """``zoo.models.weights_identity`` of a zoo name's model under the active profile (tiny: the shipped folder;
    paper: the trained drafters' folder, or ``hub id@pinned revision``)."""
    source = model_source(name)
    if _PROFILE["profile"] == "tiny":
        return weights_identity(zoo.model_dir(source))
    return weights_identity(source, revision_of(load_profile("paper"), source))  # a folder is hashed, an id is not


@functools.cache
def weights_digest(spec) -> str:
    """The ``weights`` key of a row: 12 hex digits of the sha256 of the target's weights and, for a drafter model
    ``spec``, the drafter's (plain decoding and PLD: the target's only)."""
    parts = [_weights_identity("ml-target")]
    if spec not in (None, "", "pld"):
        parts.append(_weights_identity(spec))
    return combine_weights(*parts)


@functools.cache
def tokenizer():
    """The target's tokenizer (tiny: the zoo's shared one; paper: Vicuna's)."""
    if _PROFILE["profile"] == "tiny":
        return load_tokenizer(zoo.TOKENIZER_DIR)
    source = model_source("ml-target")
    return load_tokenizer(source, revision=revision_of(load_profile("paper"), source))


def make_drafter(spec):
    """``None`` (plain decoding), ``"pld"`` (a fresh ``PromptLookupDrafter``) or a zoo model name."""
    if spec is None:
        return None
    if spec == "pld":
        return PromptLookupDrafter(max_ngram=3, min_ngram=1)
    return load_model(spec)


# --------------------------------------------------------------------------------------------- prompts
def prompt_set(
    source: str,
    src: str,
    tgt: str,
    n: int | None,
    *,
    max_prompt_tokens: int = 96,
    seed: int = 0,
    profile: str = "tiny",
) -> list[dict]:
    """``n`` held-out translation prompts ``src`` → ``tgt`` (seeded sample, prompts ≤ ``max_prompt_tokens``);
    ``n=None``: every held-out pair of the direction (of at most ``max_prompt_tokens``), in file order.

    Each row is ``parallel.direction_prompt`` plus ``ids`` (``LongTensor[L]``: ``<s>`` + prompt ids).
    profile "paper" loads the paper's WMT / IWSLT sets instead (``load_paper_prompts``; ``None``: the whole set).
    """
    if n is not None:
        n = validate.integer("n", n, minimum=1, hint="prompts per direction; None = every held-out pair")
    validate.choice("profile", profile, ("tiny", "paper"))
    validate.choice("source", source, parallel.SOURCES)
    if profile == "paper":
        rows = load_paper_prompts(src, tgt, n, generalization=source == "sphinx")
        return [{**r, "ids": encode(tokenizer(), r["prompt"])} for r in rows]
    if profile != "tiny":
        raise ValueError(f"unknown profile {profile!r}; expected 'tiny' or 'paper'")
    tok = tokenizer()
    rows = [parallel.direction_prompt(r) for r in parallel.joined_pairs(source, src, tgt, "heldout")]
    rows = [{**r, "ids": encode(tok, r["prompt"])} for r in rows]
    rows = [r for r in rows if len(r["ids"]) <= max_prompt_tokens]
    if n is None:
        return rows
    if len(rows) < n:
        raise ValueError(
            f"only {len(rows)} held-out {source} prompts {src}->{tgt} of <= {max_prompt_tokens} tokens; asked for {n}"
        )
    return random.Random(f"{seed}:{source}:{src}-{tgt}").sample(rows, n)


def load_paper_prompts(src: str, tgt: str, n: int | None, generalization: bool = False) -> list[dict]:
    """The paper's evaluation prompts (X → En, or En → X from the same set, in Vicuna's chat template,
    ``paper_setup()``; the first ``n`` rows of the set, read by ``hubdata.parallel_rows``: Ja is JParaCrawl's
    held-out tail ``train[-80:]``); raises ``DatasetNotAvailableError`` naming the dataset when it is neither
    reachable nor cached (this project never downloads at run time)."""
    if "en" not in (src, tgt):
        raise ValueError(f"the paper's test sets are X-English; there is no {src}->{tgt} set")
    setup = paper_setup()
    lang = parallel.canonical_lang(src if tgt == "en" else tgt)
    dataset_id, config, split = setup["generalization"] if generalization else setup["datasets"][lang]
    data = hubdata.parallel_rows(dataset_id, config, split, n)  # DatasetNotAvailableError names `hf download`
    rows = []
    for i, pair in enumerate(data):
        text = setup["prompt"].format(
            src_name=parallel.language_name(src), tgt_name=parallel.language_name(tgt), text=pair[src]
        )
        rows.append(
            {
                "id": f"{dataset_id}/{i}:{src}-{tgt}",
                "source": dataset_id,
                "lang": lang,
                "direction": f"{src}-{tgt}",
                "prompt": setup["chat_template"].format(prompt=text),
                "reference": " " + pair[tgt],
            }
        )
    return rows


def training_summary() -> pd.DataFrame:
    """One row per trained model (parameters, device, seconds, …): tiny, ``data/multilingual/ml_training.csv``;
    paper (``use_profile``), the ``ml_training.csv`` the paper-scale recipe wrote into ``drafters_dir()``."""
    if _PROFILE["profile"] == "tiny":
        return pd.read_csv(zoo.DATA / "multilingual" / "ml_training.csv")
    path = drafters_dir() / "ml_training.csv"
    if not path.exists():
        raise ModelNotAvailableError(f"paper profile: no {path}; train the drafters first ({TRAIN_COMMAND})")
    return pd.read_csv(path)


def budget_grid(lang: str = "de") -> pd.DataFrame:
    """The finetune-budget grid of F and P-F drafters for ``lang``: recipe, budget, finetune_tokens and the
    shipped model to load (the largest budget is the main drafter, ``same_as``)."""
    df = training_summary()
    df = df[(df.lang == lang) & df.model.str.contains(r"-b\d+$", regex=True) & df.recipe.isin(["F", "P-F"])]
    out = df.assign(load=df.same_as.fillna(df.model))
    return (
        out[["model", "load", "recipe", "finetune_budget", "finetune_tokens"]]
        .sort_values(["recipe", "finetune_budget"])
        .reset_index(drop=True)
    )


# --------------------------------------------------------------------------------------------- quality
def decode_text(output_ids: list[int]) -> str:
    """Output ids → text, without ``</s>`` and surrounding space."""
    eos = tokenizer().eos_token_id
    return tokenizer().decode([t for t in output_ids if t != eos], skip_special_tokens=True).strip()


def chrf(hypothesis: str, reference: str) -> float:
    """sacrebleu sentence chrF (n = 6, β = 2), 0..100."""
    import sacrebleu

    return float(sacrebleu.sentence_chrf(hypothesis, [reference.strip()]).score)


def corpus_chrf(hypotheses: list[str], references: list[str]) -> float:
    import sacrebleu

    return float(sacrebleu.corpus_chrf(list(hypotheses), [[r.strip() for r in references]]).score)


def paired_bootstrap(a, b, n_boot: int = 2000, seed: int = 0) -> dict:
    """Paired bootstrap of mean(a − b) over items: mean, 95 % interval and a two-sided p-value
    (share of resampled means on the other side of 0, doubled)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or len(a) == 0:
        raise ValueError(
            f"paired_bootstrap needs two equally long, non-empty 1-D samples (item i of a paired with item i of "
            f"b); got shapes {list(a.shape)} and {list(b.shape)}"
        )
    n_boot = validate.integer("n_boot", n_boot, minimum=1)
    d = a - b
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    p = 2 * min((means <= 0).mean(), (means >= 0).mean())
    return {
        "mean_diff": float(d.mean()),
        "ci_low": float(np.quantile(means, 0.025)),
        "ci_high": float(np.quantile(means, 0.975)),
        "p_value": float(min(1.0, p)),
        "n": len(d),
    }


# --------------------------------------------------------------------------------------------- running
def prompt_seed(seed: int, prompt_id: str) -> int:
    """The sampling seed of one run: the run's ``seed`` and its prompt's id, nothing else (not the prompt's place
    in a sample, so a stored row's key fixes its output whatever ``n`` the run used)."""
    return 10_007 * seed + zlib.crc32(str(prompt_id).encode()) % 10_007


def run_group(
    target, drafters: dict, prompt: dict, *, gamma: int, temperature: float, seed: int, max_new_tokens: int
) -> list[dict]:
    """Every method of ``drafters`` (``{method: spec}``, ``ar`` first) on one prompt, back to back.

    At T = 0 raises ``AssertionError`` if a method's tokens differ from plain decoding's. Rows carry τ, α,
    timings, the output text and its chrF against the reference.
    """
    sampling = SamplingConfig(temperature=temperature)
    rows, reference_ids = [], None
    for method, spec in drafters.items():
        if spec is None and method != "ar":  # a typo in a method name must not store plain decoding under it
            raise ValueError(
                f"method {method!r} has no drafter (spec None): only 'ar' is plain decoding; give a zoo drafter "
                f"name or 'pld' (drafter_name(method, lang) knows {METHODS})"
            )
        res = generate(
            target,
            prompt["ids"],
            make_drafter(spec),
            gamma=gamma,
            max_new_tokens=max_new_tokens,
            sampling=sampling,
            eos_token_id=tokenizer().eos_token_id,
            seed=seed,
        )
        if method == "ar":
            reference_ids = res.output_ids
        elif temperature == 0 and reference_ids is not None:
            assert res.output_ids == reference_ids, (
                f"greedy {method} differs from plain decoding on {prompt['id']}: lossless SD is broken"
            )
        text = decode_text(res.output_ids)
        rows.append(
            {
                "method": method,
                "drafter": spec or "",
                "new_tokens": res.new_tokens,
                "target_calls": res.target_calls,
                "block_efficiency": res.block_efficiency,
                "accepted": sum(res.accepted_per_block),
                "drafted": sum(res.drafted_per_block),
                "total_time": res.total_time,
                "prefill_time": res.prefill_time,
                "draft_time": res.draft_time,
                "tokens_per_second": res.tokens_per_second,
                "same_as_ar": res.output_ids == reference_ids if reference_ids is not None else "",
                "chrf": chrf(text, prompt["reference"]),
                "text": text,
            }
        )
    return rows


def run_grid(
    store,
    target,
    prompts: dict,
    drafters_for,
    *,
    gamma: int,
    temperatures,
    seeds,
    max_new_tokens: int,
    source: str = "django",
    desc: str = "",
) -> None:
    """Run ``drafters_for(pair)`` (``{method: spec}``) on every prompt of ``prompts`` (``{pair: rows}``), at
    every temperature (T = 0 once, T > 0 for each seed); rows go to ``store`` (keys ``KEYS``), skipping groups
    already there. A group = one (pair, temperature, seed, prompt): its methods run back to back."""
    device = next(target.parameters()).device.type
    store.provenance.update(results.model_provenance(target=target))
    groups = []
    for pair, rows in prompts.items():
        for t in temperatures:
            for s in [GREEDY_SEED] if t == 0 else seeds:
                for row in rows:
                    key = dict(
                        pair=pair,
                        source=source,
                        gamma=gamma,
                        max_new_tokens=max_new_tokens,
                        temperature=t,
                        seed=s,
                        device=device,
                        prompt=row["id"],
                        request=text_digest(row["prompt"]),
                    )
                    methods = drafters_for(pair)
                    wanted = [dict(key, method=m, weights=weights_digest(d)) for m, d in methods.items()]
                    store.want(wanted)  # this run's rows, for ``store.frame(requested=True)``
                    if not all(store.done(**k) for k in wanted):
                        groups.append((key, methods, row, prompt_seed(s, row["id"])))
    if groups:  # the first calls of a model pay one-time costs: warm every model up once, untimed
        key, methods, row, _ = groups[0]
        run_group(target, methods, row, gamma=gamma, temperature=0.0, seed=0, max_new_tokens=8)
    for key, methods, row, seed in tqdm(groups, desc=desc or "translation prompts", disable=not groups):
        out = run_group(
            target, methods, row, gamma=gamma, temperature=key["temperature"], seed=seed, max_new_tokens=max_new_tokens
        )
        store.append([{**key, **r, "weights": weights_digest(r["drafter"] or None)} for r in out])


def recompute(keys: list[dict], *, profile: str = "tiny") -> pd.DataFrame:
    """Decode the stored rows of ``keys`` (rows of ``KEYS`` plus ``drafter``, the method's spec as stored: a zoo
    name, ``pld`` or empty for plain decoding; ``weights`` may be left out) again and return the fresh rows
    (``KEYS`` + ``run_group``'s columns; ``weights`` that of the models as they are now) in the order of ``keys``.
    Every prompt is looked up among all held-out pairs of its direction and
    source, with its row's seed (``prompt_seed``) as in ``run_grid``; plain decoding runs first, so ``same_as_ar``
    is recomputed too, unless the key says ``plain_first=False`` (a grid without an ``ar`` method, as notebook
    32's: its rows' ``same_as_ar`` is empty). The tests run this in a subprocess with
    another CPU vector width and demand the committed rows back (every column but the walltime ones)."""
    import torch

    torch.set_num_threads(1)
    use_profile(profile)
    target = load_model("ml-target")
    prompts, out = {}, []
    for key in keys:
        pair, source = str(key["pair"]), str(key["source"])
        if (pair, source) not in prompts:
            rows = prompt_set(source, *pair.split("-"), None, profile=profile)
            prompts[pair, source] = {r["id"]: r for r in rows}
        prompt = prompts[pair, source][str(key["prompt"])]
        temperature = float(key["temperature"])
        spec = key.get("drafter")
        spec = None if spec is None or (isinstance(spec, float) and np.isnan(spec)) or spec == "" else str(spec)
        drafters = {str(key["method"]): spec}
        if spec is not None and key.get("plain_first", True):  # as run_grid: same_as_ar compares with its output
            drafters = {"ar": None, **drafters}
        rows = run_group(
            target,
            drafters,
            prompt,
            gamma=int(key["gamma"]),
            temperature=temperature,
            seed=prompt_seed(int(key["seed"]), prompt["id"]),
            max_new_tokens=int(key["max_new_tokens"]),
        )
        # the weights and text of today: a committed row of other weights or another text does not match it
        today = {"weights": weights_digest(spec), "request": text_digest(prompt["prompt"])}
        out.append({**{k: key[k] for k in KEYS if k not in today}, **today, **rows[-1]})
    return pd.DataFrame(out)


# The columns of a stored row that do not depend on the machine's speed (``recompute`` must give them back).
EXACT_COLUMNS = [
    "drafter",
    "new_tokens",
    "target_calls",
    "block_efficiency",
    "accepted",
    "drafted",
    "same_as_ar",
    "chrf",
    "text",
]


def architecture(name: str) -> str:
    """A label for a zoo model's shape ("llama h64 L2 mlp192 heads4"): models of one shape cost the same."""
    c = load_model(name).config
    return (
        f"llama h{c.hidden_size} L{c.num_hidden_layers} mlp{c.intermediate_size} heads{c.num_attention_heads}"
        f" V{c.vocab_size}"
    )


def store(profile: str, table: str) -> results.ResultStore:
    """A multilingual runs table (``ml_main``, ``ml_tokens``, ``ml_size``, …; keys ``KEYS``). It stands on the
    committed one (``results.COMMITTED``, read-only), so under ``make test`` (an empty ``SPECDEC_OUTPUT_DIR``)
    the notebooks read the committed runs of every held-out pair and compute only keys that are not there;
    ``tests/test_committed_results.py`` recomputes a sample of them (``recompute``)."""
    return results.ResultStore(profile, table, KEYS, base=results.COMMITTED)


def latency_store(profile: str) -> results.ResultStore:
    """The ``T_q/T_p`` table of ``latency_ratios`` (keys drafter, device, S) on the committed one, like ``store``:
    the committed runs are read with the ratios measured beside them when the device is the same."""
    return results.ResultStore(profile, "ml_latency", ["drafter", "device", "S"], base=results.COMMITTED)


def latency_ratios(store, target, drafters: list[str], context: int = 48, repeats: int = 50) -> dict:
    """``T_q/T_p`` per drafter model (one-token call at ``S = context``, ``bench.latency_ratio``).

    Drafters of one architecture cost the same, so the ratio is measured once per architecture (on its first
    drafter) and per device and kept in ``store`` (keys drafter = architecture label, device, S): one number
    per shape keeps machine noise from ranking drafters that only differ in their weights. Prompt lookup has
    no model: its ratio is 0."""
    device = bench.describe_device(next(target.parameters()).device)
    shapes = {name: architecture(name) for name in drafters if name and name != "pld"}
    for name, shape in shapes.items():
        if not store.done(drafter=shape, device=device, S=context):
            store.append(
                [
                    {
                        "drafter": shape,
                        "device": device,
                        "S": context,
                        "latency_ratio": bench.latency_ratio(target, load_model(name), context, repeats),
                    }
                ]
            )
    frame = store.frame()
    frame = frame[(frame.device == device) & (frame.S == context)]
    by_shape = dict(zip(frame.drafter, frame.latency_ratio.astype(float)))
    out = {name: by_shape[shape] for name, shape in shapes.items()}
    out["pld"] = 0.0
    return out


# --------------------------------------------------------------------------------------------- tables
def method_table(frame: pd.DataFrame, gamma: int, ratios: dict) -> pd.DataFrame:
    """One row per (pair, temperature, method): τ (pooled: Σ new tokens / Σ target calls), α, expected
    speedup from τ and ``T_q/T_p``, measured speedup (median over prompts × seeds of the tokens/s ratio to
    plain decoding in the same group), chrF (corpus, over all prompts and seeds) and runs."""
    group = ["pair", "source", "temperature", "seed", "prompt"]
    ar = frame[frame.method == "ar"].set_index(group)
    out = []
    for (pair, temperature, method), g in frame.groupby(["pair", "temperature", "method"], sort=False):
        tau = g.new_tokens.sum() / g.target_calls.sum()
        spec = g.drafter.fillna("").iloc[0] if method != "ar" else ""
        ratio = 0.0 if method == "ar" else ratios.get(spec or method, float("nan"))
        base = ar.reindex(g.set_index(group).index)
        measured = g.tokens_per_second.to_numpy() / base.tokens_per_second.to_numpy()
        drafted = g.drafted.sum()
        out.append(
            {
                "pair": pair,
                "temperature": temperature,
                "method": method,
                "tau": tau,
                "acceptance": g.accepted.sum() / drafted if drafted else float("nan"),
                "latency_ratio": ratio,
                "expected_speedup": 1.0 if method == "ar" else bench.expected_speedup(tau, gamma, ratio),
                "measured_speedup": float(np.nanmedian(measured)),
                "chrf": corpus_chrf(g.text.fillna("").tolist(), _references(g)),
                "runs": len(g),
            }
        )
    return pd.DataFrame(out)


_REFERENCES: dict[str, str] = {}


def remember_references(prompts: dict) -> None:
    """Keep each prompt's reference (results rows store the output text, not the reference)."""
    for rows in prompts.values():
        _REFERENCES.update({r["id"]: r["reference"] for r in rows})


def _references(g: pd.DataFrame) -> list[str]:
    return [_REFERENCES[p] for p in g.prompt]


def translatable_set(frame: pd.DataFrame, quantile: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Table 7's evaluation set: the held-out prompts the target demonstrably translates (the paper's target,
    Vicuna 7B, translates IWSLT14; a set it cannot translate tests nothing about the drafters).

    ``frame``: stored rows with plain decoding at T = 0 (``method`` "ar"; prompts of one ``source``). Per pair, each
    output's sentence chrF against its own reference is compared with chance: the chrF of the pair's outputs
    against the reference of another prompt of the pair (a derangement seeded by ``seed`` and the pair); a prompt is
    translatable when its chrF exceeds the ``quantile`` of that chance distribution. The set depends on the target
    alone, never on a drafter. Returns one row per prompt: pair, prompt, chrf, chance_chrf, threshold,
    translatable."""
    from specdec.multilingual.recipe import derangement

    ar = frame[(frame.method == "ar") & (frame.temperature == 0)].drop_duplicates(["pair", "prompt"])
    out = []
    for (pair, source), g in ar.groupby(["pair", "source"], sort=True):
        rows = prompt_set(source, *pair.split("-"), None, profile=_PROFILE["profile"])
        refs = {r["id"]: r["reference"] for r in rows}
        texts, prompts = g.text.fillna("").tolist(), g.prompt.astype(str).tolist()
        perm = derangement(len(prompts), random.Random(f"{seed}:{pair}")) if len(prompts) > 1 else [0]
        own = [chrf(t, refs[p]) for t, p in zip(texts, prompts)]
        chance = [chrf(t, refs[prompts[j]]) for t, j in zip(texts, perm)]
        threshold = float(np.quantile(chance, quantile))
        out += [
            {
                "pair": pair,
                "prompt": p,
                "chrf": c,
                "chance_chrf": x,
                "threshold": threshold,
                "translatable": c > threshold,
            }
            for p, c, x in zip(prompts, own, chance)
        ]
    return pd.DataFrame(out)


def table1(table: pd.DataFrame, value: str = "measured_speedup") -> pd.DataFrame:
    """Table 1 layout: rows method (+ the methods not built), columns (T, pair) and their mean."""
    wide = table.pivot_table(index="method", columns=["temperature", "pair"], values=value)
    for t in sorted(table.temperature.unique()):
        wide[(t, "mean")] = wide[t].mean(axis=1)
    wide = wide.reindex(columns=sorted(wide.columns, key=lambda c: (c[0], c[1] == "mean", c[1])))
    wide = wide.reindex([m for m in METHODS if m in wide.index])
    wide.index = [METHOD_LABELS[m] for m in wide.index]
    for name in NOT_BUILT:
        wide.loc[name] = np.nan
    return wide


def not_built_note() -> str:
    return "; ".join(f"{k}: {v}" for k, v in NOT_BUILT.items())


def quality_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Output quality per temperature and method: corpus chrF; at T = 0 whether every output equals plain
    decoding's; at T > 0 a paired bootstrap over (prompt, seed) of sentence chrF against plain decoding."""
    group = ["pair", "source", "temperature", "seed", "prompt"]
    rows = []
    for t, ft in frame.groupby("temperature"):
        ar = ft[ft.method == "ar"].set_index(group)
        for method in [m for m in METHODS if m in set(ft.method)]:
            g = ft[ft.method == method].set_index(group)
            row = {
                "temperature": t,
                "method": method,
                "chrf": corpus_chrf(g.text.fillna("").tolist(), _references(g.reset_index())),
                "mean_sentence_chrf": float(g.chrf.mean()),
                "runs": len(g),
            }
            if method != "ar":
                if t == 0:
                    row["identical_to_ar"] = bool(
                        (g.text.fillna("") == ar.reindex(g.index).text.fillna("")).all()
                        and g.same_as_ar.astype(str).eq("True").all()
                    )
                else:
                    test = paired_bootstrap(g.chrf.to_numpy(), ar.reindex(g.index).chrf.to_numpy())
                    row.update({f"vs_ar_{k}": v for k, v in test.items() if k != "n"})
            rows.append(row)
    return pd.DataFrame(rows)


def table1_drafters(pair: str) -> dict:
    """``{method: spec}`` of Table 1 for a pair ``"x-en"``: plain decoding first, then every SD method."""
    x = pair.split("-")[0]
    return {m: ("pld" if m == "pld" else drafter_name(m, x)) for m in METHODS}


def select(frame: pd.DataFrame, prompts: dict, gamma: int, temperatures, seeds, max_new_tokens: int) -> pd.DataFrame:
    """The rows of this run's configuration (a results file may hold other runs' rows too)."""
    ids = {r["id"] for rows in prompts.values() for r in rows}
    keep = (
        frame.pair.isin(list(prompts))
        & frame.prompt.isin(ids)
        & (frame.gamma == gamma)
        & (frame.max_new_tokens == max_new_tokens)
        & frame.temperature.isin(list(temperatures))
        & ((frame.temperature == 0) | frame.seed.isin(list(seeds)))
    )
    return frame[keep].reset_index(drop=True)


def show(frame: pd.DataFrame, digits: int = 2) -> str:
    """A table as text, numbers rounded, missing cells (methods not built) as "—"."""
    rounded = frame.round(digits).astype(object)
    return rounded.where(frame.notna(), "—").to_string()


__all__ = [
    "GREEDY_SEED",
    "KEYS",
    "LANGS",
    "METHODS",
    "METHOD_LABELS",
    "NOT_BUILT",
    "architecture",
    "budget_grid",
    "translatable_set",
    "weights_digest",
    "chrf",
    "corpus_chrf",
    "decode_text",
    "drafter_name",
    "latency_ratios",
    "load_model",
    "use_profile",
    "drafters_dir",
    "model_source",
    "load_paper_prompts",
    "make_drafter",
    "method_table",
    "not_built_note",
    "paired_bootstrap",
    "paper_setup",
    "prompt_set",
    "quality_table",
    "remember_references",
    "run_grid",
    "run_group",
    "select",
    "show",
    "table1",
    "table1_drafters",
    "tokenizer",
    "training_summary",
]
