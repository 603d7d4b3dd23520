"""Measuring CoS: resumable runs of every method on a task, speedup tables and the paper's theorems.

Walltime on a shared machine is noisy, so every prompt runs all methods back to back and a cell's speedup
is the median over prompts of the side-by-side ratio ``tokens/s(method) / tokens/s(standard)``. Calls per
token and acceptance are hardware-independent and reported beside it. ``cost_speedup`` converts the call
counts into time with per-call costs measured once (``call_costs``), which is what Theorems 3.1 / 3.6 model.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from specdec import bench, results, sharding
from specdec.cos import decoding as cos
from specdec.cos import tasks as cos_tasks
from specdec.cos.combine import Combination
from specdec.results import RESULTS, ResultStore, paper_numbers
from specdec.sampling import SamplingConfig
from specdec.zoo.models import load_collab, model_weights
from specdec.zoo.tasks import encode, text_digest


def theorem_3_1(alpha: float, gamma: int, c: float) -> float:
    """Naive-CoS speedup over standard collaborative decoding (no bonus token):
    ``(1 − α^γ)(1 + c) / ((1 − α)(1 + cγ))``; ``c`` = proposer call time / verifier call time."""
    if alpha >= 1:
        return gamma * (1 + c) / (1 + c * gamma)
    return (1 - alpha**gamma) * (1 + c) / ((1 - alpha) * (1 + c * gamma))


def theorem_3_6(alpha: float, gamma_q: int, gamma_p: int, c: float) -> float:
    """CoS with the alternate proposal framework: ``(1 − α^γq)(1 + c) / ((1 − α)(1 + cγq − α^γp c))``."""
    if alpha >= 1:
        alpha = 1 - 1e-9
    return (1 - alpha**gamma_q) * (1 + c) / ((1 - alpha) * (1 + c * gamma_q - alpha**gamma_p * c))


def we_acceptance(proposer_probs: torch.Tensor, other_probs: torch.Tensor, lam: float) -> torch.Tensor:
    """Exact Naive-CoS acceptance ``α = Σ min(q, r)`` with ``r = λ q + (1 − λ) p`` (Thm 3.2: ``α ≥ λ``)."""
    r = lam * proposer_probs + (1 - lam) * other_probs
    return torch.minimum(proposer_probs, r).sum(-1)


def call_costs(models, context: int = 64, repeats: int = 20) -> list[float]:
    """Median seconds of one one-token decode call T(1, context, 1) per model (``bench.forward_latency``)."""
    return [bench.forward_latency(m, 1, context, 1, repeats=repeats) for m in models]


def stored_call_costs(cost_store, set_name: str, models) -> list[float]:
    """``call_costs(models)``, measured once per (set, device) and kept in ``cost_store`` (keys set, device)."""
    device = bench.describe_device(next(models[0].parameters()).device)
    cost_store.run([dict(set=set_name, device=device)], lambda set, device: _pad("cost", call_costs(models)))
    row = cost_store.get(set=set_name, device=device)
    return [float(row[f"cost_{i}"]) for i in range(len(models))]


def make_combination(kind: str, n_models: int, lam: float = 0.5, mu: float = 0.1, temperature: float = 1.0):
    """The paper's settings: WE with ``λ`` (two models) or ``1/n`` each; CD with ``μ`` and ``T`` (0 = argmax)."""
    if kind == "we":
        return Combination.weighted(lam, n_models)
    if kind == "cd":
        return Combination("cd", 2, mu=mu, temperature=temperature)
    raise ValueError(f"unknown combination {kind!r}: use 'we' (weighted ensemble) or 'cd' (contrastive decoding)")


def default_proposer(kind: str, n_models: int, lam: float) -> int:
    """Cor. 3.3: in a two-model WE the model with the larger weight proposes (α ≥ max(λ, 1 − λ)); otherwise
    the smallest model (index 0) does."""
    return 1 if kind == "we" and n_models == 2 and lam < 0.5 else 0


def run_task(
    store,
    *,
    models,
    tokenizer,
    rows,
    set_name: str,
    task: str,
    kind: str,
    methods,
    temperature: float = 0.0,
    lam: float = 0.5,
    mu: float = 0.1,
    max_new_tokens: int = 64,
    seed: int = 0,
    default: int | None = None,
    desc: str = "",
) -> None:
    """Run every ``(method, gamma)`` of ``methods`` on every prompt of ``rows``; one stored row per run.

    Keys: ``ROW_KEY`` (``gamma`` 0 for methods without proposals; ``device`` the models' device type).
    ``temperature`` 0 decodes ``argmax r``; otherwise tokens are sampled from ``r`` (CD uses
    ``T = temperature``, WE its members at T = 1). The methods of one prompt run back to back, so their
    walltime ratio sees the same machine state. default: the proposer (``None``: ``default_proposer``).
    """
    default = default_proposer(kind, len(models), lam) if default is None else default
    combine = make_combination(kind, len(models), lam, mu, temperature if kind == "cd" else 1.0)
    sampling = SamplingConfig(temperature=0.0 if temperature == 0 else 1.0)
    prompts = {r["id"]: encode(tokenizer, r["prompt"]) for r in rows}
    _warm_up(models, combine, next(iter(prompts.values())))

    device = next(models[-1].parameters()).device.type
    store.provenance.update(results.model_provenance(**{f"model_{i}": m for i, m in enumerate(models)}))
    weights = model_weights(*models)

    def compute(method, gamma, prompt, **_):
        return decode_row(
            models, tokenizer, prompts[prompt], combine, method, gamma, default, max_new_tokens, sampling, seed
        )

    texts = {r["id"]: r["prompt"] for r in rows}
    keys = task_keys(set_name, weights, task, methods, texts, temperature, lam, mu, max_new_tokens, seed, device)
    store.run(keys, compute, desc=desc or f"{set_name}/{task}")


def decode_row(models, tokenizer, prompt_ids, combine, method, gamma, default, max_new_tokens, sampling, seed):
    """One stored row: ``cos.decode`` of one prompt (``gamma`` 0 means 1: methods without proposals) as
    ``CollabResult.summary()`` with every per-model column (``_EMPTY``) and the decoded ``text``."""
    res = cos.decode(
        models,
        prompt_ids,
        combine,
        method,
        gamma=max(1, gamma),
        default=default,
        max_new_tokens=max_new_tokens,
        sampling=sampling,
        seed=seed,
    )
    row = {**_EMPTY, **res.summary()}
    row.pop("method")
    row["text"] = tokenizer.decode(res.output_ids)
    return row


def task_keys(
    set_name, weights, task, methods, prompts, temperature, lam, mu, max_new_tokens, seed, device
) -> list[dict]:
    """The keys (``ROW_KEY``) of every ``(method, gamma)`` of ``methods`` on every prompt of ``prompts`` (``{prompt
    id: prompt text}``), the methods of one prompt next to each other (they run back to back). ``weights``:
    ``model_weights`` of the set's models; ``request``: ``text_digest`` of the prompt's text."""
    return [
        dict(
            set=set_name,
            weights=weights,
            task=task,
            method=m,
            gamma=g,
            temperature=temperature,
            lam=lam,
            mu=mu,
            max_new_tokens=max_new_tokens,
            seed=seed,
            device=device,
            prompt=pid,
            request=text_digest(text),
        )
        for pid, text in prompts.items()
        for m, g in methods
    ]


def main_grid(
    store,
    cost_store,
    *,
    profile: str,
    configs: list[dict],
    tasks,
    n_prompts: int,
    gammas,
    max_new_tokens: int,
    lam: float = 0.5,
    mu: float = 0.1,
    device=None,
    seed: int = 0,
    task_rows: dict | None = None,
    executor: str | None = None,
    shards: int = 2,
) -> dict:
    """Tables 2-4 of the paper: every method on every task for each ``{"set", "temperature"}`` config.

    Returns ``{set: per-model call costs}`` (seconds of one one-token call, also stored in ``cost_store``).
    task_rows: ``{task: rows}`` to use instead of ``cos_tasks.load_task`` (a machine without the sources).
    On CPU the models run single-threaded: for models this small, threads cost more than they give.
    executor: ``None`` runs every cell here, one after another; ``"serial"`` or ``"ray"`` split the grid's keys
    into ``shards`` shards of whole prompts (every method of a prompt on one device) and run them with
    ``sharding.run_sharded`` (``GridSetup`` loads the models in each worker). Same rows either way, except the
    walltime columns. Call costs are measured here, on ``device``.
    """
    if torch.device(device or "cpu").type == "cpu":
        torch.set_num_threads(1)

    methods = [("standard", 0), ("parallel", 0)] + [(m, g) for m in ("sd", "cos") for g in gammas]
    costs, keys, prompts = {}, [], {}
    for cfg in configs:
        models, tokenizer, kind = load_collab(profile, cfg["set"], device=device)
        costs[cfg["set"]] = stored_call_costs(cost_store, cfg["set"], models)
        for task in tasks:
            rows = (task_rows or {}).get(task) or cos_tasks.load_task(task, n_prompts, profile=profile)
            if executor is not None:  # collect the keys; the shards compute them
                prompts[task] = {r["id"]: r["prompt"] for r in rows}
                temperature, device_type = cfg.get("temperature", 0.0), next(models[-1].parameters()).device.type
                keys += task_keys(
                    cfg["set"],
                    model_weights(*models),
                    task,
                    methods,
                    prompts[task],
                    temperature,
                    lam,
                    mu,
                    max_new_tokens,
                    seed,
                    device_type,
                )
                continue
            run_task(
                store,
                models=models,
                tokenizer=tokenizer,
                rows=rows,
                set_name=cfg["set"],
                task=task,
                kind=kind,
                methods=methods,
                temperature=cfg.get("temperature", 0.0),
                lam=lam,
                mu=mu,
                max_new_tokens=max_new_tokens,
                seed=seed,
            )
    if executor is not None:
        store.want(keys)  # the shards compute them; the rows are this run's (``store.frame(requested=True)``)
        by = [k for k in ROW_KEY if k not in ("method", "gamma")]
        sharding.run_sharded(store, keys, GridSetup(profile, device, prompts), shards=shards, executor=executor, by=by)
    return costs


@dataclass
class GridSetup:
    """The ``setup`` of ``main_grid``'s shards (``sharding.run_sharded``): called in a shard's worker, returns
    ``compute(**key)``, which loads a set's models on first use (on ``device``; ``None``: the profile's) and
    decodes one key as ``run_task`` does. ``prompts``: ``{task: {prompt id: prompt text}}``."""

    profile: str
    device: str | None
    prompts: dict

    def __call__(self, store):
        if torch.device(self.device or "cpu").type == "cpu":
            torch.set_num_threads(1)
        loaded, warm = {}, set()

        def compute(set, task, method, gamma, temperature, lam, mu, max_new_tokens, seed, prompt, **_):
            if set not in loaded:
                loaded[set] = load_collab(self.profile, set, device=self.device)
            models, tokenizer, kind = loaded[set]
            store.provenance.update(results.model_provenance(**{f"model_{i}": m for i, m in enumerate(models)}))
            combine = make_combination(kind, len(models), lam, mu, temperature if kind == "cd" else 1.0)
            sampling = SamplingConfig(temperature=0.0 if temperature == 0 else 1.0)
            ids = encode(tokenizer, self.prompts[task][prompt])
            if (set, task) not in warm:
                _warm_up(models, combine, ids)
                warm.add((set, task))
            default = default_proposer(kind, len(models), lam)
            return decode_row(models, tokenizer, ids, combine, method, gamma, default, max_new_tokens, sampling, seed)

        return compute


def _warm_up(models, combine, prompt_ids) -> None:
    """One short run first: the first calls of a model pay one-time costs that would bias the first method."""
    cos.decode(models, prompt_ids, combine, "cos", gamma=2, max_new_tokens=4)


# Every parameter that changes a stored row is part of its key (a rerun with another max_new_tokens, seed or
# device computes new rows instead of returning the old ones).
# ``weights`` is ``zoo.models.model_weights`` of the set's models: a retrained model never reuses old rows.
KEYS = ["set", "weights", "task", "method", "gamma", "temperature", "lam", "mu", "max_new_tokens", "seed", "device"]
# A stored row is one prompt of a cell: its id and ``request``, the ``text_digest`` of its text (a prompt id that
# names another text, after a task generator or template changed, is computed again).
ROW_KEY = KEYS + ["prompt", "request"]
MAX_MODELS = 3  # per-model columns are written for up to this many models, so one table holds every set
_EMPTY = {f"{name}_{i}": "" for name in ("calls", "tokens_fed", "proposed", "accepted") for i in range(MAX_MODELS)}


def store(profile: str, table: str) -> ResultStore:
    """A CoS runs table (``cos_main``, ``cos_sweeps``, ``cos_theory``; keys ``ROW_KEY``). It stands on the
    committed one (``results.COMMITTED``, read-only), so under ``make test`` (an empty ``SPECDEC_OUTPUT_DIR``)
    the notebooks read the committed 16-prompt cells and compute only keys that are not there;
    ``tests/test_committed_results.py`` recomputes a sample of them (``recompute``)."""
    return ResultStore(profile, table, ROW_KEY, base=results.COMMITTED)


def cost_store(profile: str) -> ResultStore:
    """The per-call costs (``stored_call_costs``; keys set, device) on the committed table, like ``store``: the
    cost speedups of committed runs use the costs measured with them when the device is the same."""
    return ResultStore(profile, "cos_call_costs", ["set", "device"], base=results.COMMITTED)


def collab_of(label: str, profile: str = "tiny") -> tuple[str, str, int]:
    """``(model set, combination kind, proposer)`` of a stored ``set`` label.

    A set of the profile (``we``, ``we3``, ``cd``): its own kind and ``default_proposer`` (at λ = 0.5, the
    weight every label but the notebooks' λ sweeps uses; pass the row's λ to ``default_proposer`` otherwise).
    ``"<set>/proposer<k>"``: that set, model k proposing (notebook 22's Thm 3.2 runs). ``"<set>+<kind>"``: the
    set's models combined as ``kind``, model 0 proposing (notebook 21's Fig. 8 ``cd+we``)."""
    from specdec.zoo.models import load_profile

    known = set(load_profile(profile).get("collab", {}))
    if "/proposer" in label:
        name, k = label.split("/proposer")
        kind, proposer = None, int(k)
    elif "+" in label:
        name, kind = label.split("+")
        proposer = 0
    else:
        name, kind, proposer = label, None, None
    if name not in known or kind not in (None, "we", "cd"):
        raise ValueError(
            f"unknown CoS set label {label!r}: a set of {sorted(known)}, '<set>/proposer<k>' or '<set>+<we|cd>'"
        )
    return name, kind, proposer


def recompute(keys: list[dict], *, profile: str = "tiny", n_prompts: int = 64) -> pd.DataFrame:
    """Decode the stored CoS rows of ``keys`` (rows of ``ROW_KEY``, e.g. a sample of a committed table)
    again and return the fresh rows (key columns + ``decode_row``'s) in the order of ``keys``.

    The set label says which models, combination and proposer (``collab_of``); a plain set's proposer follows
    the key's λ (``default_proposer``), as in ``run_task``. Prompts are looked up by id among the first
    ``n_prompts`` of each task. The tests run this in a subprocess with another CPU vector width and demand
    the committed rows back (every column but the walltime ones)."""
    torch.set_num_threads(1)  # as main_grid on CPU: the tiny models' rows do not depend on it
    loaded, prompts, out = {}, {}, []
    for key in keys:
        name, kind, proposer = collab_of(str(key["set"]), profile)
        if name not in loaded:
            models, tokenizer, own_kind = load_collab(profile, name, device=str(key["device"]))
            loaded[name] = models, tokenizer, own_kind, model_weights(*models)  # hashed once per set
        models, tokenizer, own_kind, weights = loaded[name]
        kind = kind or own_kind
        lam, mu, temperature = float(key["lam"]), float(key["mu"]), float(key["temperature"])
        if proposer is None:
            proposer = default_proposer(kind, len(models), lam)
        task = str(key["task"])
        if task not in prompts:
            prompts[task] = {r["id"]: r["prompt"] for r in cos_tasks.load_task(task, n_prompts, profile=profile)}
        combine = make_combination(kind, len(models), lam, mu, temperature if kind == "cd" else 1.0)
        sampling = SamplingConfig(temperature=0.0 if temperature == 0 else 1.0)
        text = prompts[task][str(key["prompt"])]
        ids = encode(tokenizer, text)
        # today's weights and prompt text: a row made with other weights, or for another text, comes back stale
        key = {**key, "weights": weights, "request": text_digest(text)}
        row = decode_row(
            models,
            tokenizer,
            ids,
            combine,
            str(key["method"]),
            int(key["gamma"]),
            proposer,
            int(key["max_new_tokens"]),
            sampling,
            int(key["seed"]),
        )
        out.append({**{k: key[k] for k in ROW_KEY}, **row})
    return pd.DataFrame(out)


# The columns of a stored row that do not depend on the machine's speed (``recompute`` must give them back).
EXACT_COLUMNS = [
    *_EMPTY,
    "bonus_reused",
    "role_swaps",
    "wasted",
    "rejections",
    "stop_reason",
    "new_tokens",
    "acceptance_rate",
    "calls_per_token",
    "text",
]


def speedup_table(frame: pd.DataFrame, baseline: str = "standard", costs: dict | None = None) -> pd.DataFrame:
    """One row per cell and method: median per-prompt walltime speedup over ``baseline``, tokens/s, calls per
    token, acceptance, and (if ``costs`` maps set -> per-model call times) the call-cost speedup."""
    keys = [k for k in KEYS if k in frame]  # frames written before a key column existed lack it
    cell = [k for k in keys if k not in ("method", "gamma")]
    base = frame[frame.method == baseline].set_index(cell + ["prompt"])
    out = []
    for key, group in frame.groupby(keys, sort=False):
        g = group.set_index(cell + ["prompt"])
        ref = base.reindex(g.index)
        ratio = g.tokens_per_second / ref.tokens_per_second.values
        row = dict(zip(keys, key))
        row.update(
            speedup=float(ratio.median()),
            tokens_per_second=float(g.new_tokens.sum() / (g.total_time - g.prefill_time).sum()),
            calls_per_token=float(_calls(g).sum() / g.new_tokens.sum()),
            acceptance=float(_accepted(g).sum() / max(1, _proposed(g).sum())) if _proposed(g).sum() else float("nan"),
            new_tokens=int(g.new_tokens.sum()),
            prompts=len(g),
        )
        if costs and row["set"] in costs:
            c = costs[row["set"]]
            row["cost_speedup"] = float(_cost(ref, c).sum() / ref.new_tokens.sum()) / float(
                _cost(g, c).sum() / g.new_tokens.sum()
            )
        out.append(row)
    return pd.DataFrame(out)


def _pad(name, values) -> dict:
    return {f"{name}_{i}": values[i] if i < len(values) else "" for i in range(MAX_MODELS)}


def _cols(g, prefix):
    return [c for c in g.columns if c.startswith(prefix) and c[len(prefix) :].isdigit()]


def _calls(g):
    return g[_cols(g, "calls_")].fillna(0).sum(axis=1)


def _proposed(g):
    return g[_cols(g, "proposed_")].fillna(0).sum(axis=1)


def _accepted(g):
    return g[_cols(g, "accepted_")].fillna(0).sum(axis=1)


def _cost(g, costs):
    return sum(g[f"calls_{i}"].fillna(0) * c for i, c in enumerate(costs) if f"calls_{i}" in g)


def best_over_gamma(table: pd.DataFrame) -> pd.DataFrame:
    """The paper reports SD and CoS at their best proposal length: keep, per cell and method, the γ with the
    highest speedup (``gamma`` column says which)."""
    cell = [k for k in KEYS if k != "gamma" and k in table]
    idx = table.groupby(cell, sort=False)["speedup"].idxmax()
    return table.loc[idx].reset_index(drop=True)


PAPER_METHODS = {
    "standard": ["WE", "CD"],
    "parallel": ["WE-P", "CD-P"],
    "sd": ["WE-SD", "CD-SD"],
    "cos": ["WE-CoS", "CD-CoS"],
    "naive": ["WE-Naive-CoS (w/o APF)", "CD-Naive-CoS (w/o APF)"],
}
PAPER_TASKS = {"humaneval": "HumanEval", "gsm8k": "GSM8K", "mmlu": "MMLU", "cnndm": "CNNDM"}


def paper_speedups(table: str, model_pair: str, temperature: str | None = None) -> pd.DataFrame:
    """A paper table (``cos_table2_we``, ``cos_table3_cd``, ``cos_apf_ablation`` …) as method × task speedups."""
    df = paper_numbers(table)
    df = df[(df.model_pair == model_pair) & (df.unit == "x")]
    if temperature is not None:
        df = df[df.temperature == temperature]
    to_ours = {name: ours for ours, names in PAPER_METHODS.items() for name in names}
    df = df.assign(
        method=df.method_canonical.map(to_ours),
        task=df.dataset.map({v: k for k, v in PAPER_TASKS.items()}),
        paper=df.value.astype(float),
    )
    return df.pivot_table(index="method", columns="task", values="paper").reindex(
        [m for m in PAPER_METHODS if m in set(df.method)]
    )


def equation_accuracy(text: str) -> float:
    """Share of the written equations ``a op b (op c …) = d`` in ``text`` that are arithmetically right
    (nan if there are none): a graded quality score for worked GSM8K-like solutions."""
    import re

    found = re.findall(r"(\d+(?:\s*[-+*/]\s*\d+)+)\s*=\s*(\d+)", text)
    if not found:
        return float("nan")
    right = sum(_equation_holds(lhs, rhs) for lhs, rhs in found)
    return right / len(found)


def _equation_holds(lhs: str, rhs: str) -> bool:
    """Whether ``lhs`` (digits and ``+ - * /``, as the pattern above matched) equals ``rhs``; a division by zero
    is simply wrong. Parsed as an expression tree of numbers and four operators only, never evaluated as code
    (``05`` is 5, not a syntax error)."""
    import ast
    import operator as op
    import re

    ops = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv}

    def value(node):
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        raise ValueError(f"not plain arithmetic: {ast.dump(node)}")

    text = re.sub(r"\d+", lambda m: str(int(m.group())), lhs)  # leading zeros: "05" -> "5"
    try:
        return abs(value(ast.parse(text, mode="eval").body) - int(rhs)) < 1e-9
    except (ZeroDivisionError, OverflowError, ValueError, SyntaxError, RecursionError):
        return False


def answer_correct(task: str, text: str, row: dict) -> bool | None:
    """Task accuracy of one output: GSM8K-like final number, MMLU-like letter; ``None`` for other tasks."""
    import re

    if task == "gsm8k":
        found = re.search(r"answer is\s*(-?\d+)", text) or None
        numbers = re.findall(r"-?\d+", text)
        value = found.group(1) if found else (numbers[-1] if numbers else None)
        return value is not None and int(value) == int(row["answer"])
    if task == "mmlu":
        found = re.search(r"\b([ABCD])\.", text)
        return bool(found) and found.group(1) == row["answer"]
    return None


GPU_TABLE = "cos_main_gpu"


def stored_gpu_table(profile: str):
    """The main grid as measured on a GPU by ``python -m specdec.cos.bench`` (None if never run)."""
    path = RESULTS / profile / f"{GPU_TABLE}.csv"
    if not path.exists():
        return None
    df = pd.read_csv(path)
    return df.pivot_table(index=["device", "set", "temperature", "method"], columns="task", values="speedup").round(2)


def main(argv=None):
    """Run notebook 20's grid outside Jupyter (e.g. on a GPU box) and write the best-γ speedup table.

    ``--executor ray --shards 8``: the grid's prompts split over 8 Ray tasks, one GPU each."""
    import argparse
    import pathlib
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--n-prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--out", type=pathlib.Path, required=True, help="CSV to write")
    parser.add_argument("--rows", type=pathlib.Path, help="JSON {task: rows} written by --dump-rows")
    parser.add_argument("--dump-rows", action="store_true", help="write the task rows to --out and stop")
    parser.add_argument("--executor", choices=["serial", "ray"], help="shard the grid (specdec.sharding)")
    parser.add_argument("--shards", type=int, default=2, help="with --executor: shards (e.g. one per GPU)")
    parser.add_argument("--results", type=pathlib.Path, help="results root to keep (default: a temporary one)")
    args = parser.parse_args(argv)
    tasks = ["humaneval", "gsm8k", "mmlu", "cnndm"]
    if args.dump_rows:
        import json

        rows = {
            t: [
                {k: r[k] for k in ("id", "prompt", "reference")}
                for r in cos_tasks.load_task(t, args.n_prompts, profile=args.profile)
            ]
            for t in tasks
        }
        args.out.write_text(json.dumps(rows))
        return
    task_rows = None
    if args.rows:
        import json

        task_rows = json.loads(args.rows.read_text())
    configs = [
        {"set": "we", "temperature": 1.0},
        {"set": "we3", "temperature": 1.0},
        {"set": "cd", "temperature": 0.0},
        {"set": "cd", "temperature": 1.0},
    ]
    root = args.results or pathlib.Path(tempfile.mkdtemp())
    store = ResultStore(args.profile, "cos_main", ROW_KEY, root=root)
    cost_store = ResultStore(args.profile, "cos_call_costs", ["set", "device"], root=root)
    costs = main_grid(
        store,
        cost_store,
        profile=args.profile,
        configs=configs,
        tasks=tasks,
        n_prompts=args.n_prompts,
        gammas=[1, 5],
        max_new_tokens=args.max_new_tokens,
        device=args.device,
        task_rows=task_rows,
        executor=args.executor,
        shards=args.shards,
    )
    best = best_over_gamma(speedup_table(store.frame(), costs=costs))
    best = best.drop(columns="device")  # the key's device type ("cuda"), replaced by the GPU's name
    best.insert(0, "device", bench.describe_device(args.device))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    best.to_csv(args.out, index=False)
    print(best.pivot_table(index=["set", "temperature", "method"], columns="task", values="speedup").round(2))


@torch.no_grad()
def expected_we_acceptance(models, sequences, lams, proposer: int = 0) -> pd.DataFrame:
    """Exact Naive-CoS acceptance ``E[Σ_x min(q, r)]`` (Thm 3.2) along given continuations, by teacher forcing.

    sequences: ``(prompt_ids, output_ids)`` pairs; ``q`` is ``models[proposer]``'s distribution (T = 1) at each
    output position, ``r = λ_proposer q + (1 − λ_proposer) p`` with ``λ`` the weight of ``models[0]``.
    Returns one row per λ: ``alpha`` (mean over positions) and the bound ``max`` of the proposer's weight.
    """
    per_position = []
    for prompt_ids, output_ids in sequences:
        if not len(output_ids):
            continue
        ids = torch.cat([torch.as_tensor(prompt_ids), torch.as_tensor(output_ids)])[None]
        device = next(models[0].parameters()).device
        probs = [m(ids.to(device)).logits[0, len(prompt_ids) - 1 : -1].float().softmax(-1) for m in models]
        per_position.append(probs)
    rows = []
    for lam in lams:
        weight = lam if proposer == 0 else 1 - lam
        q = torch.cat([p[proposer] for p in per_position])
        other = torch.cat([p[1 - proposer] for p in per_position])
        alpha = we_acceptance(q, other, weight)
        rows.append(dict(lam=lam, proposer=proposer, alpha=float(alpha.mean()), bound=weight, positions=len(alpha)))
    return pd.DataFrame(rows)


def theory_table(table: pd.DataFrame, costs: dict) -> pd.DataFrame:
    """Measured speedups of Naive-CoS and CoS beside Thm 3.1 / 3.6 evaluated at the measured α and
    ``c = T_proposer / T_verifier`` (two-model sets; the proposer is model 0, the verifier model 1)."""
    rows = []
    for _, r in table[table.method.isin(["naive", "cos"])].iterrows():
        c0, c1 = costs[r["set"]][:2]
        c = c0 / c1
        gamma = int(r["gamma"])
        pred = theorem_3_1(r.acceptance, gamma, c) if r.method == "naive" else theorem_3_6(r.acceptance, gamma, 1, c)
        rows.append(
            dict(
                set=r["set"],
                task=r.task,
                method=r.method,
                gamma=gamma,
                alpha=r.acceptance,
                c=c,
                theory=pred,
                cost_speedup=r.get("cost_speedup", float("nan")),
                walltime_speedup=r.speedup,
            )
        )
    out = pd.DataFrame(rows)
    out["cost_over_theory"] = out.cost_speedup / out.theory
    out["walltime_over_theory"] = out.walltime_speedup / out.theory
    return out


def gamma_trend(curves: pd.DataFrame, costs: dict, tolerance: float = 0.10) -> pd.DataFrame:
    """Shape of each speedup-vs-γ curve (columns ``curve`` "set/task", ``gamma``, ``speedup``, ``acceptance``).

    ``interior optimum`` when the best γ is neither end, beats both ends by more than ``tolerance`` and the
    curve rises to it and falls after it (within ``tolerance``);
    ``flat`` when the whole curve stays within ``tolerance``; ``increasing`` / ``decreasing`` when every step
    moves that way within ``tolerance`` (walltime noise).
    ``explained``: an interior optimum, or a monotone trend in the direction that Thm 3.6 predicts from the
    curve's mean acceptance α and ``c = T_proposer / T_verifier`` (high α and small c favour long proposals).
    """
    rows = []
    for curve, g in curves.sort_values("gamma").groupby("curve", sort=False):
        s = g.speedup.to_numpy()
        gammas = g.gamma.astype(int).to_numpy()
        best = int(gammas[s.argmax()])
        alpha = float(g.acceptance.mean())
        set_name = curve.split("/")[0]
        c = costs[set_name][0] / costs[set_name][1]
        change = theorem_3_6(alpha, int(gammas[-1]), 1, c) / theorem_3_6(alpha, int(gammas[0]), 1, c)
        predicted = "flat" if abs(change - 1) <= tolerance else "increasing" if change > 1 else "decreasing"
        k = int(s.argmax())
        rises = (s[1 : k + 1] >= (1 - tolerance) * s[:k]).all()
        falls = (s[k + 1 :] <= (1 + tolerance) * s[k:-1]).all()
        if s.max() <= (1 + tolerance) * s.min():
            shape = "flat"
        elif 0 < k < len(s) - 1 and s[k] > (1 + tolerance) * max(s[0], s[-1]) and rises and falls:
            shape = "interior optimum"
        elif (s[1:] >= (1 - tolerance) * s[:-1]).all() and s[-1] > s[0]:
            shape = "increasing"
        elif (s[1:] <= (1 + tolerance) * s[:-1]).all() and s[-1] < s[0]:
            shape = "decreasing"
        else:
            shape = "no clear trend"
        rows.append(
            dict(
                curve=curve,
                shape=shape,
                best_gamma=best,
                alpha=alpha,
                c=c,
                theory_predicts=predicted,
                explained=shape == "interior optimum" or shape == predicted,
            )
        )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()
