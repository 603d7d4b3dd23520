"""Findings as data: a paper's claim, our estimate with a 95% interval, the sample size and the verdict.

Every paper's ``bench`` module turns its findings into ``Verdict`` objects with one function per finding,
so that the rule for "holds" is code, unit-tested on hand-built frames, and the same in every notebook:

- ``holds``: the whole 95% interval lies on the claim's side of its threshold;
- ``does not hold``: the whole interval lies on the other side;
- ``inconclusive``: the interval straddles the threshold (more prompts or requests would decide it);
- ``not testable on this proxy``: the tiny proxy does not recreate the condition the claim depends on (``validity``
  ``no``), whatever the interval says.

Every finding says whether the proxy recreates the claim's condition (``validity``: yes / partly / no, with one
line of why, ``judged``). A speed finding carries two estimates (``two_regimes``): the *paper regime* (the run's
hardware-independent counts priced at the paper's per-call costs, ``specdec.costs``), which decides the verdict,
and *this machine* (measured walltime, labelled with its device and c). A sanity check (``section`` "sanity") must
pass: a failure is a bug of this project, and it is not counted among the papers' findings.

``bootstrap_ci`` resamples the *units* a claim is about (prompts, requests), never tokens, since tokens of one
generation are not independent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from specdec.validate import reads_frame

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
NOT_TESTABLE = "not testable on this proxy"
VALIDITY = ("yes", "partly", "no")
FINDING, SANITY = "finding", "sanity"


@dataclass(frozen=True)
class Verdict:
    """One finding. ``estimate`` and ``low``/``high`` (95% interval) are in the claim's unit; ``n`` counts the
    resampled units; ``status`` is ``HOLDS``, ``FAILS`` or ``INCONCLUSIVE``; ``detail`` says what was compared."""

    name: str
    claim: str
    estimate: float
    low: float
    high: float
    n: int
    status: str
    paper: str = ""
    detail: str = ""
    validity: str = ""  # does the proxy recreate the claim's condition: yes / partly / no
    validity_why: str = ""
    section: str = FINDING  # or SANITY: a check of this project, not a finding of a paper
    regime: str = ""  # speed findings: the cost regime of ``estimate`` (the paper's)
    machine: Verdict | None = None  # speed findings: the measured walltime estimate on this machine
    seeds: tuple = ()  # a finding over training seeds: ((seed, its verdict on that seed's rows alone), ...)
    reversed_by: tuple = ()  # the seeds whose estimate reverses the pooled verdict (so it is inconclusive)

    def row(self) -> dict:
        """A tidy row (the paper notebooks' tables)."""
        return {
            "finding": self.name,
            "claim": self.claim,
            "paper": self.paper,
            "estimate": round(self.estimate, 3),
            "ci95": f"[{self.low:.3f}, {self.high:.3f}]",
            "n": self.n,
            "verdict": self.status,
        }

    def board_row(self) -> dict:
        """``row`` with the scoreboard's columns: section, the regime of the estimate, this machine's estimate
        (``machine_*``, empty for a finding not about speed) and the proxy validity."""
        m = self.machine
        return {
            "section": self.section,
            **self.row(),
            "regime": self.regime,
            "machine_estimate": round(m.estimate, 3) if m else "",
            "machine_ci95": f"[{m.low:.3f}, {m.high:.3f}]" if m else "",
            "machine_verdict": m.status if m else "",
            "machine_regime": m.regime if m else "",
            "validity": self.validity,
            "validity_why": self.validity_why,
        }

    def markdown(self) -> str:
        paper = f" Paper: {self.paper}." if self.paper else ""
        detail = f" {self.detail}" if self.detail else ""
        regime = f" [{self.regime}]" if self.regime else ""
        machine = ""
        if self.machine:
            m = self.machine
            machine = f" This machine ({m.regime}): {m.estimate:.3f} (95% CI {m.low:.3f} to {m.high:.3f}), {m.status}."
        validity = f" Proxy validity: {self.validity} ({self.validity_why})." if self.validity else ""
        mark = STANDIN_LABEL if _on_standins() else ""  # on every verdict a stand-in run shows, not only at its top
        return (
            f"{mark}**{self.name} {self.status}** — {self.claim}.{paper} Ours: {self.estimate:.3f} "
            f"(95% CI {self.low:.3f} to {self.high:.3f}, n = {self.n}){regime}.{machine}{detail}{validity}"
        )


def judged(verdict: Verdict, validity: str, why: str) -> Verdict:
    """``verdict`` with its proxy validity; with ``no`` its status becomes ``NOT_TESTABLE`` (the estimate stays)."""
    if validity not in VALIDITY:
        raise ValueError(f"validity must be one of {VALIDITY}, got {validity!r}")
    status = NOT_TESTABLE if validity == "no" else verdict.status
    return replace(verdict, validity=validity, validity_why=why, status=status)


def sanity(verdict: Verdict) -> Verdict:
    """``verdict`` as a sanity check: it must hold (a failure is a bug), and it is no finding of a paper."""
    _check_verdict("verdict", verdict)
    return replace(verdict, section=SANITY)


def two_regimes(paper: Verdict, machine: Verdict, regime: str, machine_regime: str) -> Verdict:
    """A speed finding: ``paper`` (counts priced in the paper's regime ``regime``) decides; ``machine`` (measured
    walltime on the device ``machine_regime`` names, with its c) rides along with its own interval and verdict."""
    return replace(paper, regime=regime, machine=replace(machine, regime=machine_regime))


PRICED, MEASURED = "priced_speed", "tokens_per_second"  # the speed columns of the two regimes


def in_two_regimes(make, frame, priced, *args, regime: str, machine: str, speed_only: int | None = None, **kw):
    """A paper's speed findings in both regimes: ``make(frame, *args, value=…, **kw)`` (a list of verdicts) on
    ``priced`` (the frame with ``priced_speed``: counts in the paper's regime ``regime``; decides) and on ``frame``
    (``tokens_per_second`` measured on the machine ``machine`` names), paired by position. ``speed_only``: only that
    many leading verdicts are about speed (the rest are kept from the paper-regime list as they are)."""
    return in_two_regimes_over_seeds(
        make, {0: frame}, lambda f: priced, *args, regime=regime, machine=machine, speed_only=speed_only, **kw
    )


def in_two_regimes_over_seeds(make, frames: dict, price, *args, regime: str, machine: str, rules: dict | None = None,
                              speed_only: int | None = None, **kw):  # fmt: skip
    """``in_two_regimes`` over training seeds (``frames``: ``{seed: frame}``, seed 0 first): the paper-regime
    verdicts (``make`` on ``price(frame)``, the frame with ``priced_speed``) per seed and pooled, combined by
    ``over_seeds`` with ``rules``; the measured ones on seed 0's frame alone, since a seed's rows are counts
    (decoded in batches, their walltime columns empty) and walltime is seed 0's. One seed: ``in_two_regimes``."""
    paper = over_seeds(lambda f: make(price(f), *args, value=PRICED, **kw), frames, rules)
    measured = make(frames[min(frames)], *args, value=MEASURED, **kw)
    k = len(paper) if speed_only is None else speed_only
    return [two_regimes(p, m, regime, machine) for p, m in zip(paper[:k], measured[:k])] + paper[k:]


def validity(level: str, *why: str) -> tuple[str, str]:
    """One entry of a findings module's ``VALIDITY`` (what ``judge_all`` reads): ``(level, "level: why; …")``, the
    level (yes / partly / no) written once and the reasons joined by "; "."""
    if level not in VALIDITY:
        raise ValueError(f"validity must be one of {VALIDITY}, got {level!r}")
    return level, f"{level}: " + "; ".join(why)


def judge_all(verdicts, validity: dict, strict: bool = True) -> list[Verdict]:
    """``judged`` on each verdict from ``validity`` (finding name → (yes/partly/no, why)). With ``strict`` (the tiny
    profile, whose validity the tables record) a name without an entry is an error, so that no finding reaches the
    board without its proxy validity; otherwise (another profile's names) such a verdict is returned unjudged, and
    on the stand-in hub every verdict is "not testable on this proxy" with the reason ``STANDIN_WHY``."""
    missing = [v.name for v in verdicts if v.name not in validity]
    if missing and strict:
        raise KeyError(f"no proxy validity for {missing}")
    if not strict and _on_standins():  # random weights recreate no condition of any paper: say so on every row
        return [judged(v, "no", STANDIN_WHY) for v in verdicts]
    return [judged(v, *validity[v.name]) if v.name in validity else v for v in verdicts]


# What a run's partial tables (a smoke-sized run, one sweep) raise when a finding reads rows they lack.
PARTIAL_TABLE_ERRORS = (KeyError, ValueError, IndexError, FileNotFoundError)


def or_not_computed(name: str, compute: Callable[[], list], strict: bool) -> list:
    """``compute()`` (a list of verdicts), or ``[]`` with one printed line naming ``name`` as not computed when the
    run's tables lack rows it reads: the one rule by which the scoreboard (notebook 90) and a notebook that prints
    the board's verdicts skip a finding outside the tiny profile. With ``strict`` (the tiny profile, whose tables are
    complete) the error is raised instead, so a committed table that lost rows fails loudly."""
    try:
        return compute()
    except PARTIAL_TABLE_ERRORS as err:
        if strict:
            raise
        why = f"{type(err).__name__}: {err}"[:300]
        print(
            f"{name}: not computed: this run's tables lack rows its findings read (a smoke-sized run covers part "
            f"of each sweep; run its notebooks at full size for them). {why}"
        )
        return []


STANDIN_WHY = (
    "stand-in hub (make standin-hub): random-weight models under the paper's ids, so no number tests the paper"
)


STANDIN_LABEL = "**[stand-in run: random weights, this verdict means nothing]** "


def _on_standins() -> bool:
    from specdec import hub  # the hub reads $HF_HOME; the verdicts need it only for another profile's rows

    return hub.standin_cache()


def decide(low: float, high: float, threshold: float = 0.0, greater: bool = True) -> str:
    """``HOLDS`` if the interval ``[low, high]`` lies wholly above ``threshold`` (below, if not ``greater``),
    ``FAILS`` if wholly on the other side, else ``INCONCLUSIVE``. Touching the threshold is not enough."""
    if any(np.isnan([low, high])):
        return INCONCLUSIVE
    if low > high:
        raise ValueError(f"an interval needs low <= high, got [{low}, {high}]")
    if greater:
        return HOLDS if low > threshold else FAILS if high <= threshold else INCONCLUSIVE
    return HOLDS if high < threshold else FAILS if low >= threshold else INCONCLUSIVE


def pooled_over_seeds(pooled: Verdict, seeds: dict, rule: Callable[[float, float], str] | None = None, *,
                      threshold: float = 0.0, greater: bool = True) -> Verdict:  # fmt: skip
    """A finding over training seeds (issue 26): ``pooled`` is its verdict on every seed's rows together, ``seeds``
    ``{seed label: verdict on that seed's rows alone}``. The pooled status stands only if no seed's point estimate
    reverses it, i.e. ``rule(estimate, estimate)`` (the finding's own decision, default ``decide`` at ``threshold``
    / ``greater``) gives the opposite status (``FAILS`` for a pooled ``HOLDS`` and vice versa); otherwise the
    finding is ``INCONCLUSIVE``, as it is when the pooled verdict is. The pooled estimate and interval are kept; the
    detail lists every seed's estimate, interval and status, as do ``seeds`` and ``reversed_by``."""
    _check_verdict("pooled", pooled)
    rule = rule or (lambda low, high: decide(low, high, threshold, greater))
    opposite = {HOLDS: FAILS, FAILS: HOLDS}.get(pooled.status)
    reversing = [k for k, v in seeds.items() if opposite and rule(v.estimate, v.estimate) == opposite]
    status = INCONCLUSIVE if reversing or opposite is None else pooled.status
    per_seed = "; ".join(
        f"seed {k}: {v.estimate:.3f} [{v.low:.3f}, {v.high:.3f}] {v.status}" for k, v in seeds.items()
    )  # fmt: skip
    note = f" Training seeds ({len(seeds)}, pooled {pooled.status}): {per_seed}."
    if reversing:
        note += f" Seed(s) {', '.join(map(str, reversing))} reverse the pooled verdict: inconclusive."
    return replace(
        pooled, status=status, detail=(pooled.detail + note).strip(), seeds=tuple(seeds.items()),
        reversed_by=tuple(reversing),
    )  # fmt: skip


def over_seeds(
    findings: Callable, frames: dict, rules: dict | None = None, per_seed: dict | None = None
) -> list[Verdict]:
    """``findings(frame) -> [Verdict]`` on each training seed's frame (``frames``: ``{seed: frame}``) and on all of
    them stacked (the findings' per-request statistics, ``per_request``, average a request's seeds into one unit),
    combined per finding by ``pooled_over_seeds``; one seed: its verdicts as they are. ``rules``: ``{finding name:
    (threshold, greater)}`` for a finding not decided at 0, greater (the default), or ``{finding name: rule}``, the
    finding's own decision ``rule(low, high) -> status``. ``per_seed``: ``{seed: {name: verdict}}`` already computed
    (``seed_table``'s), so that no seed's findings are decided twice."""
    import pandas as pd

    if not frames:
        raise ValueError("over_seeds needs the frame of at least one training seed ({seed: frame}), got none")
    if len(frames) == 1:
        return findings(next(iter(frames.values())))
    per_seed = per_seed or seed_verdicts(findings, frames)
    pooled = findings(pd.concat(list(frames.values()), ignore_index=True))
    out = []
    for v in pooled:
        rule = (rules or {}).get(v.name, (0.0, True))
        out.append(
            pooled_over_seeds(
                replace(v, claim=f"{v.claim}; pooled over training seeds"),
                {k: verdicts[v.name] for k, verdicts in per_seed.items()},
                rule if callable(rule) else None,
                threshold=0.0 if callable(rule) else rule[0],
                greater=True if callable(rule) else rule[1],
            )
        )
    return out


def complete_seeds(frames: dict, keys: list[str]) -> tuple[dict, dict]:
    """``(complete, lacking)``: the training seeds of ``frames`` (``{seed: frame}``) whose frame holds every ``keys``
    combination the lowest seed's holds (the seed a notebook decodes; the others are read from their rows), and
    ``{seed: how many of those it lacks}`` for the others. A seed without rows at a value only seed 0 ran (a new
    window h) would otherwise enter a pool with its other rows and bias it."""
    have = {k: set(f[keys].astype(str).itertuples(index=False, name=None)) for k, f in sorted(frames.items())}
    need = next(iter(have.values()), set())
    lacking = {k: len(need - h) for k, h in have.items() if need - h}
    return {k: f for k, f in sorted(frames.items()) if k not in lacking}, lacking


def over_complete_seeds(findings: Callable, frames: dict, keys: list[str], rules: dict | None = None) -> list[Verdict]:
    """``over_seeds`` over only the seeds holding every row the finding reads (``complete_seeds`` on ``keys``); each
    verdict names the seeds left out, and why, in its ``detail``."""
    complete, lacking = complete_seeds(frames, keys)
    out = over_seeds(findings, complete, rules)
    if not lacking:
        return out
    note = (
        f" Pooled over training seed(s) {', '.join(map(str, complete))} only: seed(s) "
        + ", ".join(f"{k} (lacks {n} of the {'/'.join(keys)} rows seed {min(frames)} has)" for k, n in lacking.items())
        + " left out."
    )
    return [replace(v, detail=(v.detail + note).strip()) for v in out]


def seed_verdicts(findings: Callable, frames: dict) -> dict:
    """``{seed: {finding name: verdict}}``: ``findings(frame)`` on each training seed's frame alone (``frames``:
    ``{seed: frame}``), in seed order; the per-seed part of ``over_seeds`` and ``seed_table``."""
    return {k: {v.name: v for v in findings(f)} for k, f in sorted(frames.items())}


def seed_table(findings: Callable, frames: dict, rules: dict | None = None, per_seed: dict | None = None):
    """One row per finding of ``over_seeds(findings, frames, rules)``: ``finding``, ``seed <k>`` (estimate [95 %
    interval] on that seed's frame alone), ``pooled`` (over every seed) and ``verdict`` (the pooled status, standing
    only if no seed reverses it). ``per_seed``: ``seed_verdicts(findings, frames)`` already computed (a caller that
    also reads a seed's own statuses decides no seed twice)."""
    import pandas as pd

    per_seed = per_seed or seed_verdicts(findings, frames)
    rows = []
    for v in over_seeds(findings, frames, rules, per_seed):
        row = {"finding": v.name}
        for k, verdicts in per_seed.items():
            s = verdicts[v.name]
            row[f"seed {k}"] = f"{s.estimate:.3f} [{s.low:.3f}, {s.high:.3f}]"
        rows.append({**row, "pooled": f"{v.estimate:.3f} [{v.low:.3f}, {v.high:.3f}]", "verdict": v.status})
    return pd.DataFrame(rows)


def bootstrap_ci(
    units: Sequence, statistic: Callable[[Sequence], float], *, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``(estimate, low, high)``: ``statistic`` on ``units`` and the 2.5 / 97.5 percentiles of it over
    ``n_boot`` resamples of the units with replacement (a seeded generator: the same interval every run)."""
    units = list(units)
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1 (resamples), got {n_boot!r}")
    if not units:
        return float("nan"), float("nan"), float("nan")
    estimate = float(statistic(units))
    rng = np.random.default_rng(seed)
    draws = [statistic([units[i] for i in rng.integers(0, len(units), len(units))]) for _ in range(n_boot)]
    low, high = np.nanpercentile(np.asarray(draws, dtype=float), [2.5, 97.5])
    return estimate, float(low), float(high)


def bootstrap_rows(values: np.ndarray, statistic, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """``bootstrap_ci`` with the rows of an array as the units (``values``: units × columns, e.g. prompts ×
    methods): ``statistic`` takes the resampled rows as one array, so a statistic over many columns sees one
    resample of the units for all of them."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1 (resamples), got {n_boot!r}")
    n = len(values)
    if not n:
        return float("nan"), float("nan"), float("nan")
    # bootstrap_ci's resamples, drawn the same way (one rng.integers per resample, so the same intervals), indexing
    # the array directly: no list of Python ints per resample, which cost as much as many statistics
    rng = np.random.default_rng(seed)
    estimate = float(statistic(values[np.arange(n)]))
    draws = [statistic(values[rng.integers(0, n, n)]) for _ in range(n_boot)]
    low, high = np.nanpercentile(np.asarray(draws, dtype=float), [2.5, 97.5])
    return estimate, float(low), float(high)


@reads_frame
def per_request(frame, column: str, value: str):
    """``(wide, first)``: the mean ``value`` per request (index) x ``column`` of a runs frame, and each request's
    first row (same index). A request is a distinct ``request`` digest where the frame has one, so two row ids of
    one input (a generator that drew it twice) are one bootstrap unit, not two; else a ``row`` id. Requests are in
    the order of their row ids, so a frame without repeats resamples exactly as one indexed by ``row``."""
    unit = "request" if "request" in frame else "row"
    first = frame.sort_values("row", kind="stable").drop_duplicates(unit).set_index(unit)
    wide = frame.pivot_table(index=unit, columns=column, values=value, aggfunc="mean").reindex(first.index)
    return wide, first


def paired_difference(a: Sequence[float], b: Sequence[float], *, n_boot: int = 2000, seed: int = 0):
    """Mean of ``a − b`` over paired units (the same prompts under two methods) with its bootstrap interval:
    ``bootstrap_ci`` of the mean, its resamples drawn by the same calls of the same generator and their means taken
    as rows of one array (the same numbers, without a Python loop over resamples; ``tests/test_verdict.py``)."""
    first, second = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if first.ndim != 1 or first.shape != second.shape:
        raise ValueError(f"paired units: a and b must be 1-D and equally long, got {first.shape} and {second.shape}")
    diffs = first - second
    if not len(diffs):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    picks = np.stack([rng.integers(0, len(diffs), len(diffs)) for _ in range(n_boot)])
    low, high = np.nanpercentile(diffs[picks].mean(axis=1), [2.5, 97.5])
    return float(np.mean(diffs)), float(low), float(high)


def chi2_pvalue(observed, probs, min_expected: float = 5.0) -> float:
    """χ² goodness-of-fit p-value of cell counts ``observed`` against cell probabilities ``probs``: cells expecting
    ≤ ``min_expected`` draws are merged into one (every χ² test of this project uses this rule). A merged cell that
    expects (almost) nothing but was observed gives 0: an impossible draw. No draws: nan."""
    from scipy.stats import chisquare  # here: scipy.stats costs ~0.3 s to import, and few callers need it

    observed, probs = _cells(observed, probs)
    n = observed.sum()
    if n == 0:
        return float("nan")
    expected = probs * n
    keep = expected > min_expected
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 1e-9:
        if obs[-1] > 0:
            return 0.0
        obs, exp = obs[:-1], exp[:-1]
    if len(obs) < 2:
        return 1.0  # one cell: nothing to compare
    return float(chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def total_variation(observed, probs) -> float:
    """Total variation between the empirical cell frequencies and ``probs``."""
    observed, probs = _cells(observed, probs)
    return float(0.5 * np.abs(observed / observed.sum() - probs / probs.sum()).sum())


def _cells(observed, probs) -> tuple[np.ndarray, np.ndarray]:
    """Cell counts and cell probabilities as float arrays: 1-D, equally long, finite and non-negative."""
    observed, probs = np.asarray(observed, dtype=float), np.asarray(probs, dtype=float)
    if observed.ndim != 1 or observed.shape != probs.shape:
        raise ValueError(f"observed and probs must be 1-D and equally long, got {observed.shape} and {probs.shape}")
    for name, values in (("observed", observed), ("probs", probs)):
        if not np.isfinite(values).all() or (values < 0).any():
            raise ValueError(f"{name} must be finite and >= 0 (counts, probabilities), got {values.tolist()[:8]}")
    return observed, probs


def _check_verdict(name: str, value) -> None:
    if not isinstance(value, Verdict):
        raise TypeError(f"{name} must be a Verdict, got {type(value).__name__} {value!r}")


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "NOT_TESTABLE",
    "PARTIAL_TABLE_ERRORS",
    "STANDIN_LABEL",
    "STANDIN_WHY",
    "VALIDITY",
    "Verdict",
    "bootstrap_ci",
    "chi2_pvalue",
    "complete_seeds",
    "decide",
    "in_two_regimes_over_seeds",
    "judge_all",
    "judged",
    "or_not_computed",
    "over_seeds",
    "paired_difference",
    "per_request",
    "pooled_over_seeds",
    "sanity",
    "seed_table",
    "seed_verdicts",
    "total_variation",
    "validity",
]
