"""CoS tables: speedups per cell and method from stored rows, the paper's numbers and table layouts, the theorems'
predictions beside the measurements, and the task scores of the quality trade-off (Fig. 8).

Walltime on a shared machine is noisy, so every prompt runs all methods back to back and a cell's speedup is the
median over prompts of the side-by-side ratio ``tokens/s(method) / tokens/s(standard)``. Calls per token and
acceptance are hardware-independent and reported beside it. ``cost_speedup`` converts the call counts into time with
per-call costs measured once (``zoo.call_costs``), which is what Theorems 3.1 / 3.6 model.
"""

from __future__ import annotations

import pandas as pd
import torch

from specdec import validate
from specdec.cos.algorithm import decode, make_combination, theorem_3_1, theorem_3_6, we_acceptance
from specdec.results import RESULTS, paper_numbers
from specdec.validate import reads_frame
from specdec.zoo.models import load_profile
from specdec.zoo.tasks import encode

# The columns that name a cell of a CoS table (a stored row adds its prompt and the prompt text's digest): every
# parameter that changes a row. ``weights`` is ``zoo.models.model_weights`` of the set's models, so a retrained model
# never reuses old rows; ``device`` the models' device type.
KEYS = ["set", "weights", "task", "method", "gamma", "temperature", "lam", "mu", "max_new_tokens", "seed", "device"]


@reads_frame
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

    from specdec.cos.tasks import TASKS

    validate.choice("task", task, list(TASKS))  # an unknown task is an error, never "no accuracy" (None)
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
    """The main grid as measured on a GPU by ``python -m specdec.cos.experiments`` (None if never run)."""
    load_profile(getattr(profile, "name", profile))  # an unknown profile: one error naming the known ones
    path = RESULTS / profile / f"{GPU_TABLE}.csv"
    if not path.exists():
        return None
    df = pd.read_csv(path)
    return df.pivot_table(index=["device", "set", "temperature", "method"], columns="task", values="speedup").round(2)


@reads_frame
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


@reads_frame
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


def exact_acceptance(models, rows: dict, lams, max_new_tokens: int) -> pd.DataFrame:
    """Thm 3.2's exact Naive-CoS acceptance along the WE standard decode of every prompt of ``rows`` (``{task:
    rows}``), with either model proposing (``expected_we_acceptance``). ``models``: a ``zoo.ModelSet``."""
    sequences = []
    combine = make_combination("we", 2)
    for task_rows in rows.values():
        for r in task_rows:
            ids = encode(models.tokenizer, r["prompt"])
            out = decode(models.models, ids, combine, "standard", max_new_tokens=max_new_tokens)
            sequences.append((ids, out.output_ids))
    return pd.concat([expected_we_acceptance(models.models, sequences, lams, proposer=k) for k in (0, 1)])


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


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "GPU_TABLE",
    "KEYS",
    "PAPER_METHODS",
    "PAPER_TASKS",
    "answer_correct",
    "best_over_gamma",
    "equation_accuracy",
    "exact_acceptance",
    "gamma_trend",
    "paper_speedups",
    "speedup_table",
    "stored_gpu_table",
    "theory_table",
]
