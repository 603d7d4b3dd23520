"""C2: CoS with a combined distribution samples exactly from it (T = 1), checked by a χ² goodness of fit.

The paper's premise (Sec. 3, Alg. 2): speculative decoding with the combined distribution ``r`` (a weighted
ensemble or contrastive decoding of the models' distributions) as its target emits tokens that follow ``r``
exactly. ``c2_rows`` draws the first two new tokens ``draws`` times (seeds ``seed .. seed + draws − 1``) by one
method (CoS by default) on one prompt and tabulates them in cells whose exact probabilities are enumerated from the
models (no sampling):

- test ``first``: the first token, one cell per token;
- test ``pair``: the pair (x1, x2), one cell (x1, x2) per second token for every first token x1 that ``r``
  expects at least ``pair_min`` times, and one cell (x1, *) for every other first token.

Each cell carries its probability under ``r`` and under the last model alone (``expert``, at T = 1): the
control, a deliberately wrong sampler, so a check that cannot tell the two apart is seen to have no power. Cells
that neither distribution expects more than ``min_expected`` times are merged into one ``rest`` cell (the χ² rule
of ``chi2_pvalue`` merges them anyway), so a table has a few dozen rows and its partition does not depend on the
draws. ``most_distinct_prompt`` picks the prompt whose exact ``r`` is farthest (total variation) from the nearest
single model: the sharpest check; it uses the exact distributions only, never the draws.
"""

from __future__ import annotations

import numpy as np
import torch

from specdec import results
from specdec.cos.algorithm import decode, make_combination
from specdec.cos.combine import Combination
from specdec.results import ResultStore
from specdec.sampling import SamplingConfig
from specdec.zoo.models import load_profile, model_weights
from specdec.zoo.tasks import encode, text_digest

# A stored row is one cell of one test of one (set, prompt, method, gamma, combination, draws, seed) experiment.
KEY = ["set", "weights", "task", "prompt", "request", "method", "gamma", "lam", "mu", "draws", "seed", "device"]
TESTS = ("first", "pair")


@torch.no_grad()
def next_probs(models, prefixes: torch.Tensor, combine: Combination) -> tuple[torch.Tensor, torch.Tensor]:
    """``(r, expert)`` ``[B, V]`` float64: the combined distribution and the last model's own (T = 1) after each
    row of ``prefixes [B, L]`` (full forward passes, no cache)."""
    logits = torch.stack([m(prefixes).logits[:, -1].float() for m in models])  # [n, B, V]
    return combine(logits).double(), logits[-1].softmax(-1).double()


def prompt_distance(models, prompt_ids, combine: Combination) -> float:
    """Total variation between the exact ``r`` after ``prompt_ids`` and the nearest single model (T = 1)."""
    with torch.no_grad():
        logits = torch.stack([m(prompt_ids[None]).logits[0, -1].float() for m in models])
    r = combine(logits)
    return min(0.5 * float((r - x.softmax(-1)).abs().sum()) for x in logits)


def most_distinct_prompt(models, combine: Combination, prompts: dict) -> str:
    """The id of ``prompts`` (``{id: token ids}``) whose exact ``r`` is farthest from the nearest single model."""
    return max(prompts, key=lambda pid: prompt_distance(models, prompts[pid], combine))


def draw_pairs(models, prompt_ids, combine: Combination, method: str, gamma: int, draws: int, seed: int):
    """``(pairs [draws, 2], role_swaps)``: the first two new tokens of ``draws`` seeded runs of ``method`` at T = 1."""
    pairs, swaps = [], 0
    for s in range(seed, seed + draws):
        res = decode(
            models,
            prompt_ids,
            combine,
            method,
            gamma=gamma,
            max_new_tokens=2,
            sampling=SamplingConfig(1.0),
            eos_token_id=[],
            seed=s,
        )
        pairs.append(res.output_ids[:2])
        swaps += res.role_swaps
    return np.asarray(pairs, dtype=int), swaps


def exact_cells(models, prompt_ids, combine: Combination, draws: int, min_expected: float = 5.0, pair_min=20.0):
    """``{test: (labels, r, expert, key)}``: every cell of both tests with its exact probability under ``r`` and
    under the last model alone, and ``key(x1, x2)`` mapping a drawn pair to its cell label. Cells that neither
    distribution expects more than ``min_expected`` times in ``draws`` are merged into ``rest``."""
    r1, e1 = next_probs(models, prompt_ids[None], combine)
    r1, e1 = r1[0], e1[0]
    split = torch.nonzero(r1 * draws >= pair_min).flatten().tolist() or [int(r1.argmax())]  # tested with x2
    prefixes = torch.cat([prompt_ids.repeat(len(split), 1), torch.tensor(split)[:, None]], dim=1)
    r2, e2 = next_probs(models, prefixes, combine)  # [len(split), V]
    out = {"first": _cells([str(t) for t in range(len(r1))], r1, e1, draws, min_expected)}
    labels = [f"{a} {b}" for a in split for b in range(r2.shape[1])] + [f"{a} *" for a in range(len(r1))]
    tested = torch.tensor(split, dtype=torch.long)
    joint_r = torch.cat([(r1[tested, None] * r2).flatten(), r1.clone().index_fill_(0, tested, 0.0)])
    joint_e = torch.cat([(e1[tested, None] * e2).flatten(), e1.clone().index_fill_(0, tested, 0.0)])
    split_set = set(split)
    out["pair"] = _cells(labels, joint_r, joint_e, draws, min_expected)
    out["first"] += (lambda a, b: str(a),)
    out["pair"] += (lambda a, b: f"{a} {b}" if a in split_set else f"{a} *",)
    return out


def _cells(labels, r, expert, draws, min_expected):
    keep = ((r * draws > min_expected) | (expert * draws > min_expected)).numpy()
    idx = np.flatnonzero(keep)
    r, expert = r.numpy(), expert.numpy()
    return (
        [labels[i] for i in idx] + ["rest"],
        np.append(r[idx], max(0.0, 1.0 - r[idx].sum())),
        np.append(expert[idx], max(0.0, 1.0 - expert[idx].sum())),
    )


def c2_rows(models, prompt_ids, combine: Combination, *, method="cos", gamma=1, draws=500, seed=0, **cells_kw):
    """The rows of one C2 experiment: per test and cell, ``observed`` (draws in the cell), ``r`` and ``expert``
    (exact probabilities); ``role_swaps``: the proposals started by a model other than the default in all draws
    (CoS's bonus tokens at work; the same on every row)."""
    pairs, swaps = draw_pairs(models, prompt_ids, combine, method, gamma, draws, seed)
    cells = exact_cells(models, prompt_ids, combine, draws, **cells_kw)
    return [dict(row, role_swaps=swaps) for row in tabulate(pairs, cells)]


def tabulate(pairs, cells) -> list[dict]:
    """One row per test and cell of ``cells`` (``exact_cells``): ``observed``, the drawn ``pairs`` in the cell."""
    rows = []
    for test, (labels, r, expert, key) in cells.items():
        index = {label: i for i, label in enumerate(labels)}
        observed = np.zeros(len(labels), dtype=int)
        for a, b in pairs:
            observed[index.get(key(int(a), int(b)), index["rest"])] += 1
        rows += [
            dict(test=test, cell=label, observed=int(o), r=float(p), expert=float(q))
            for label, o, p, q in zip(labels, observed, r, expert)
        ]
    return rows


def store(profile: str) -> ResultStore:
    """The C2 table ``cos_c2`` (keys ``KEY``; one row per test and cell), on the committed one (read-only), so
    under ``make test`` notebook 22 reads the committed draws and computes only keys that are not there."""
    load_profile(getattr(profile, "name", profile))  # an unknown profile: one error naming the known ones
    return ResultStore(profile, "cos_c2", KEY, base=results.COMMITTED)


def run(store, *, models, tokenizer, set_name: str, kind: str, rows: dict, gamma: int, draws: int, seed: int = 0):
    """One C2 experiment on a CoS model set: the prompt of ``rows`` (``{task: task rows}``) whose exact ``r`` is
    farthest from either model alone (``most_distinct_prompt``), ``draws`` CoS runs at T = 1 (WE λ = 0.5 / CD
    μ = 0.1, the paper's) with ``gamma``, stored (``c2_rows``). Returns the key."""
    combine = make_combination(kind, len(models), temperature=1.0)
    texts = {r["id"]: (task, r["prompt"]) for task, task_rows in rows.items() for r in task_rows}
    prompts = {pid: encode(tokenizer, text) for pid, (_, text) in texts.items()}
    pid = most_distinct_prompt(models, combine, prompts)
    key = dict(
        set=set_name,
        weights=model_weights(*models),
        task=texts[pid][0],
        prompt=pid,
        request=text_digest(texts[pid][1]),
        method="cos",
        gamma=gamma,
        lam=0.5,
        mu=0.1,
        draws=draws,
        seed=seed,
        device=next(models[-1].parameters()).device.type,
    )
    store.provenance.update(results.model_provenance(**{f"model_{i}": m for i, m in enumerate(models)}))
    store.run([key], lambda **_: c2_rows(models, prompts[pid], combine, gamma=gamma, draws=draws, seed=seed))
    return key


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["KEY", "TESTS", "run", "store"]
