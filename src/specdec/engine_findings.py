"""Notebook 01's findings on the engine as ``Verdict``s, and their proxy validity (``ENGINE_VALIDITY``).

- ``iid_verdict``: is acceptance i.i.d. (the model behind ``bench.expected_block_efficiency`` and Eq. (1))?
- ``engine_verdict``: the decode loop adds no overhead beyond its model calls (``bench.summarize_speedup``);
- ``engine_speed_verdict``: SD in this engine beats plain decoding, in the paper's regime and on this machine;
- ``findings_from_results``: the three on a results folder (what the scoreboard lists as "engine").

The measurements these judge (latency, speedup, the τ sweep) are ``specdec.bench``'s.
"""

from __future__ import annotations

from dataclasses import replace

from specdec.bench import iid_acceptance, summarize_speedup
from specdec.validate import reads_frame
from specdec.verdict import INCONCLUSIVE, Verdict, bootstrap_ci, decide, judge_all, over_seeds, validity

IID_TOLERANCE = 0.1


def iid_verdict(frame, tolerance: float = IID_TOLERANCE) -> Verdict:
    """Notebook 01 (b): is acceptance i.i.d.? Under i.i.d. acceptance the β implied by τ at each γ
    (``iid_acceptance``) is one constant. Estimate: the largest spread (max − min over γ) of β over the drafts,
    from τ pooled over prompts; 95% interval by a bootstrap over prompts (one resample serves every draft and
    γ, as the same prompts were decoded for each). Holds when the whole interval is below ``tolerance``.

    ``frame``: ``acceptance_rows`` (columns ``draft, gamma, prompt, new_tokens, target_calls``)."""
    by_prompt: dict = {}
    for r in frame[["draft", "gamma", "prompt", "new_tokens", "target_calls"]].itertuples(index=False):
        by_prompt.setdefault(r.prompt, []).append((r.draft, int(r.gamma), int(r.new_tokens), int(r.target_calls)))

    def spread(sample):
        totals: dict = {}
        for rows in sample:
            for draft, gamma, new, calls in rows:
                t = totals.setdefault((draft, gamma), [0, 0])
                t[0], t[1] = t[0] + new, t[1] + calls
        betas: dict = {}
        for (draft, gamma), (new, calls) in totals.items():
            betas.setdefault(draft, []).append(iid_acceptance(new / calls, gamma))
        return max(max(b) - min(b) for b in betas.values())

    units = [by_prompt[k] for k in sorted(by_prompt)]
    est, low, high = bootstrap_ci(units, spread, n_boot=1000)
    gammas = sorted(int(g) for g in frame.gamma.unique())
    return Verdict(
        "i.i.d. acceptance",
        f"the per-token acceptance β implied by τ stays within {tolerance} across γ = {gammas} for every draft "
        "(the i.i.d. model behind τ = (1 − α^(γ+1)) / (1 − α))",
        est,
        low,
        high,
        len(units),
        decide(low, high, tolerance, greater=False),
        "(assumption of Eq. (1); our check)",
        f"Drafts {sorted(frame.draft.unique())}; n counts held-out prompts.",
    )


ENGINE_EFFICIENCY_GOAL = 0.95


def engine_verdict(
    rows, gamma: int, latency_ratio_value: float, verify_cost: float, goal: float = ENGINE_EFFICIENCY_GOAL
):
    """Notebook 01 (d): the decode loop adds no overhead beyond its model calls: the measured walltime speedup
    (``summarize_speedup`` of ``speedup_rows``) is at least ``goal`` × the prediction from the measured τ,
    ``T_q/T_p`` and verification cost (``engine_efficiency_refined``). Bootstrap over prompts."""
    import pandas as pd

    df = pd.DataFrame(rows)
    units = [g for _, g in df.groupby("prompt")]

    def efficiency(sample):
        part = pd.concat([g.assign(prompt=i) for i, g in enumerate(sample)])
        return summarize_speedup(part, gamma, latency_ratio_value, verify_cost)["engine_efficiency_refined"]

    est, low, high = bootstrap_ci(units, efficiency, n_boot=500)
    return Verdict(
        "engine efficiency",
        f"measured speedup ≥ {goal} × the prediction from measured τ, T_q/T_p and verification cost "
        "(no overhead of the decode loop)",
        est,
        low,
        high,
        len(units),
        decide(low, high, goal),
        f"(our goal: ≥ {goal})",
        "Walltime on the machine that wrote the rows (see their device column); a claim about this engine on this"
        " machine, so it has no paper regime. The SD speed itself is the row 'engine speed'.",
        regime="this machine (the claim is about the decode loop's overhead)",
    )


def projected_speed_verdict(rows, regime=None, seeds: dict | None = None) -> Verdict:
    """A labelled projection (never the verdict of "engine speed"): the speculative runs of the timed rows
    (``speedup_rows``: per prompt, repeat and method, with ``target_calls``, ``draft_calls``, ``new_tokens``) priced by
    ``costs.sd_speedup`` at ``regime`` (default TABED Table 6, 68M on 7B), pooled over prompts (Σ tokens / Σ priced
    steps), bootstrap over prompts. ``seeds``: ``{train seed k > 0: its speculative runs' counts on the same
    prompts}`` (``engine_seeds``): decided over the seeds (``verdict.over_seeds``)."""
    import pandas as pd

    from specdec import costs

    regime = regime or costs.paper_table6_regime("7B", "68M")
    df = pd.DataFrame(rows)
    frames = {
        0: df.assign(train_seed=0),
        **{int(k): pd.DataFrame(f).assign(train_seed=int(k)) for k, f in (seeds or {}).items()},
    }
    paper = over_seeds(lambda f: [priced_speed_verdict(f, regime)], frames, {"engine speed": (1.0, True)})[0]
    return replace(paper, regime=f"projection: {regime.label()}")


def measured_speed_verdict(rows, machine: str = "this machine") -> Verdict:
    """The measured walltime speedup of the timed rows (``speedup_rows``: per prompt, repeat and method
    ``autoregressive`` / ``speculative``, ``total_time``): Σ per-prompt median AR time / Σ median SD time, bootstrap
    over prompts, > 1.0; ``regime`` is ``machine`` (the device and its measured c)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    times = df.groupby(["prompt", "method"]).total_time.median().unstack("method")
    units = [times.loc[p].to_dict() for p in times.index]

    def measured(sample):
        return sum(u["autoregressive"] for u in sample) / sum(u["speculative"] for u in sample)

    est, low, high = bootstrap_ci(units, measured, n_boot=500)
    detail = "Measured walltime, per-prompt medians over repeats, summed over prompts."
    return Verdict(
        "engine speed",
        SPEED_CLAIM,
        est,
        low,
        high,
        len(units),
        decide(low, high, 1.0),
        SPEED_PAPER,
        detail,
        regime=machine,
    )


# The engine-speed claim's condition (docs/papers/engine.md, "Engine speed: where it is decided"), fixed before the
# GPU runs: a pair can show SD faster than plain decoding only where its own measured costs leave room for it, i.e.
# Eq. (1) at the run's measured τ, draft calls per block, draft cost c = T_q/T_p and verification cost predicts more
# than SPEED_ROOM. Rows that meet it decide (measured walltime); a pair that does not is shown, not counted.
SPEED_ROOM = 1.0


def gpu_speed_units(peer, latency):
    """Per (run, device, draft, prompt) of the GPU rows (``speed.gpu_rows``: ``gpu_peer_real_sizes``,
    ``gpu_latency_real_sizes``): ``ratio`` (median tokens/s of ``specdec`` over ``ar`` over the rounds) with its
    pair's measured ``c``, ``tau`` and Eq. (1)'s ``predicted`` speedup (``speed.gpu_cost_model_check``)."""
    import pandas as pd

    from specdec.speed import gpu_cost_model_check

    check = gpu_cost_model_check(peer, latency)[["run", "device", "draft", "c", "tau", "predicted"]]
    tps = peer.groupby(["run", "device", "draft", "prompt", "method"]).tokens_per_second.median().unstack("method")
    units = (tps["specdec"] / tps["ar"]).rename("ratio").reset_index()
    return pd.merge(units, check, on=["run", "device", "draft"]) if len(units) else units


def engine_speed_verdict(
    units,
    cpu: Verdict | None = None,
    cpu_predicted: float = float("nan"),
    projection: Verdict | None = None,
    room: float = SPEED_ROOM,
    pair: str = "the tiny pair",
) -> Verdict:
    """ "Engine speed", decided where the engine runs in the papers' cost regime: the measured speedup of SD over
    plain decoding on the units (``gpu_speed_units``) whose pair meets the condition (``predicted`` > ``room``),
    geometric mean of per-prompt ratios, bootstrap over units, > 1.0. No unit meets it: inconclusive (its validity,
    ``speed_validity``, is then "no": not testable). ``cpu``: the measured verdict on this machine
    (``measured_speed_verdict``) of ``pair`` (the profile's own pair: "the tiny pair", "the real pair") with
    ``cpu_predicted``, Eq. (1) at its measured c (shown, never deciding); ``projection``:
    ``projected_speed_verdict`` (a labelled projection in ``detail``)."""
    import numpy as np

    ok = units[units.predicted > room] if len(units) else units
    logs = np.log(ok.ratio.to_numpy(float)) if len(ok) else np.array([])
    est, low, high = bootstrap_ci(list(logs), lambda s: float(np.mean(s)), n_boot=1000)
    est, low, high = (float(np.exp(x)) for x in (est, low, high))
    status = decide(low, high, 1.0) if len(ok) else INCONCLUSIVE
    pairs = ok.groupby(["device", "draft"]).agg(c=("c", "mean"), tau=("tau", "mean")) if len(ok) else None
    where = (
        "; ".join(
            f"{d.split(';')[0]} {d.split(';')[1].strip()} {k} (c {r.c:.3f}, τ {r.tau:.2f})"
            for (d, k), r in pairs.iterrows()
        )
        if pairs is not None
        else "no pair meets it"
    )
    left = units[units.predicted <= room].groupby("draft").predicted.mean() if len(units) else {}
    detail = (
        f"Deciding rows: measured walltime on a GPU at the papers' sizes (scripts/gpu_bench.py, random weights),"
        f" geometric mean over (run, prompt) of SD / plain tokens/s, the pairs where Eq. (1) at the measured c"
        f" predicts > {room:g}: {where}."
    )
    if len(left):
        detail += (
            " Left out (Eq. (1) predicts ≤ 1 at their measured c): "
            + ", ".join(f"{k} ({p:.2f}x)" for k, p in left.items())
            + "."
        )
    if cpu is not None:
        slower = "slower than" if cpu.high < 1 else "not faster than" if cpu.low <= 1 else "faster than"
        detail += (
            f" On this CPU {pair} measures {cpu.estimate:.2f}x [{cpu.low:.2f}, {cpu.high:.2f}]: SD is"
            f" {slower} plain decoding, because its draft costs c = T_q/T_p of the target's call here"
            f" ({cpu.regime}); Eq. (1) at that c predicts {cpu_predicted:.2f}x, so this pair cannot show a"
            " speedup on this machine."
        )
    if projection is not None:
        priced_at = projection.regime.removeprefix("projection: ")
        detail += (
            f" Projection, not a measurement: {pair}'s counts priced at {priced_at}:"
            f" {projection.estimate:.3f} [{projection.low:.3f}, {projection.high:.3f}]. {projection.detail}"
        )
    regime = f"measured walltime, GPU ({where})"
    v = Verdict(
        "engine speed", SPEED_CLAIM, est, low, high, len(ok), status, SPEED_PAPER, detail.strip(), regime=regime
    )
    return replace(v, machine=cpu) if cpu is not None else v


def speed_validity(
    units, cpu_predicted: float = float("nan"), room: float = SPEED_ROOM, pair: str = "the tiny pair"
) -> tuple[str, str]:
    """ "Engine speed"'s validity from its measured condition: ``partly`` (random-weight models at the papers'
    sizes) where some GPU pair's Eq. (1) at its measured c predicts > ``room``, else ``no``."""
    ok = units[units.predicted > room] if len(units) else units
    cpu = f"{pair} on this CPU: Eq. (1) at its measured c predicts {cpu_predicted:.2f}x"
    if len(ok):
        return validity(
            "partly",
            f"measured on a GPU at the papers' sizes with random weights (an early-exit draft,"
            f" so τ > 1); condition: Eq. (1) at the measured c predicts > {room:g} ({len(ok)} units)",
            cpu,
        )
    return validity("no", f"no pair whose measured costs leave room for a speedup (Eq. (1) > {room:g}); {cpu}")


SPEED_CLAIM = "speculative decoding in this engine is faster than plain decoding (speedup > 1.0)"
SPEED_PAPER = "(our check: SD must beat plain decoding where the draft's measured cost leaves room for it)"


@reads_frame
def priced_speed_verdict(frame, regime) -> Verdict:
    """The paper-regime half of ``engine_speed_verdict``: the speculative runs' counts (``new_tokens``,
    ``target_calls``, ``draft_calls``) priced at ``regime``, pooled over prompts; a prompt is one unit (its counts
    averaged over repeats and, in frames of several training seeds, over the seeds: column ``train_seed``)."""
    from specdec import costs

    sd = frame[frame.method == "speculative"]
    sd = sd.assign(train_seed=sd.train_seed if "train_seed" in sd else 0)
    columns = ["new_tokens", "target_calls", "draft_calls"]
    per_prompt = sd.groupby(["prompt", "train_seed"])[columns].mean().groupby("prompt").mean()
    units = [per_prompt.loc[p].to_numpy(float) for p in per_prompt.index]

    def priced(sample):
        c = sum(sample)
        return float(costs.sd_speedup(c[0], c[1], c[2], regime))

    est, low, high = bootstrap_ci(units, priced, n_boot=500)
    detail = "Counts of the speculative runs priced at the regime's costs, pooled over prompts."
    return Verdict("engine speed", SPEED_CLAIM, est, low, high, len(units), decide(low, high, 1.0), SPEED_PAPER, detail)


def iid_over_seeds(frames: dict, tolerance: float = IID_TOLERANCE) -> Verdict:
    """``iid_verdict`` over training seeds (``frames``: ``{seed: τ-sweep rows}``; one seed: its verdict)."""
    return over_seeds(lambda f: [iid_verdict(f, tolerance)], frames, {"i.i.d. acceptance": (tolerance, False)})[0]


# the foundation drafts' training seeds k > 0: their runs (``harness.engine_seeds``), keyed by ``train_seed``
SEED_TABLE = "engine_seeds"


def seed_rows(folder):
    """The rows of ``engine_seeds`` in a results folder (``results/<profile>``), or ``None`` where there are none."""
    import pathlib

    import pandas as pd

    from specdec import results

    path = pathlib.Path(folder) / f"{SEED_TABLE}.csv"
    return pd.read_csv(path, dtype=results.DIGEST_DTYPES) if path.exists() else None


@reads_frame
def sweep_frames(seed0, rows) -> dict:
    """``{train seed: its τ-sweep rows}`` (columns ``draft, gamma, prompt, new_tokens, target_calls``): seed 0 from
    ``tau_vs_gamma`` (``seed0``), each seed k > 0 from its ``engine_seeds`` rows on the same prompts and token
    budget."""
    frames = {0: seed0}
    if rows is None:
        return frames
    prompts, tokens = seed0.prompts.iloc[0], int(seed0.max_new_tokens.iloc[0])
    mine = rows[(rows.method != "plain") & (rows.prompts == prompts) & (rows.max_new_tokens == tokens)]
    mine = mine[mine.gamma.isin(seed0.gamma.unique())]
    for k, group in mine.groupby("train_seed", sort=True):
        frames[int(k)] = group.reset_index(drop=True)
    return frames


@reads_frame
def speed_frames(timed, rows, draft: str) -> dict:
    """``{train seed: rows of engine_speed_verdict}``: seed 0 the timed rows of (d) (``timed``), each seed k > 0 its
    ``engine_seeds`` runs of ``draft`` on the same prompts, γ and budget as method ``speculative`` (counts, no time)."""
    frames = {0: timed.assign(train_seed=0)}
    if rows is None:
        return frames
    first = timed.iloc[0]
    mine = rows[(rows.draft == draft) & (rows.prompts == first.prompts) & (rows.gamma == int(first.gamma))]
    mine = mine[mine.max_new_tokens == int(first.max_new_tokens)]
    for k, group in mine.groupby("train_seed", sort=True):
        frames[int(k)] = group.assign(method="speculative").reset_index(drop=True)
    return frames


ENGINE_VALIDITY = {  # the reasons; each row's level comes from its measured condition below
    "i.i.d. acceptance": validity("partly", "tiny proxy pairs on this project's prompts; a check of Eq. (1)'s model"),
    "engine efficiency": validity("yes", "a claim about this engine's decode loop on the machine that ran it"),
}
# The conditions (issue 44), fixed before the rows were recomputed (docs/reference/engine.md is the reference):
# i.i.d. acceptance can only fail where a non-i.i.d. acceptance moves the implied β: at least IID_MIN_GAMMAS γ values
# swept and every draft's β (at the smallest γ, every training seed pooled) inside [tolerance, 1 − tolerance]; near 0
# or 1 every pattern implies the same β. Engine efficiency's prediction prices γ draft calls per block: the run's
# counted draft calls per block must be at least EFFICIENCY_MIN_CALLS of γ, else it prices calls the engine never made.
IID_MIN_GAMMAS = 3
EFFICIENCY_MIN_CALLS = 0.9


@reads_frame
def iid_validity(frame, tolerance: float = IID_TOLERANCE) -> tuple[str, str]:
    """The i.i.d. check's condition on ``frame`` (``acceptance_rows`` of every training seed stacked)."""
    gammas = sorted(int(g) for g in frame.gamma.unique())
    first = frame[frame.gamma == gammas[0]].groupby("draft")[["new_tokens", "target_calls"]].sum()
    betas = {d: iid_acceptance(r.new_tokens / r.target_calls, gammas[0]) for d, r in first.iterrows()}
    measured = (
        f"{len(gammas)} γ values swept (needs ≥ {IID_MIN_GAMMAS}); implied β at γ = {gammas[0]}: "
        + ", ".join(f"{d} {b:.2f}" for d, b in betas.items())
        + f" (needs each in [{tolerance:g}, {1 - tolerance:g}], where a non-i.i.d. acceptance can move it)"
    )
    reason = ENGINE_VALIDITY["i.i.d. acceptance"][1].removeprefix("partly: ")
    if len(gammas) >= IID_MIN_GAMMAS and all(tolerance <= b <= 1 - tolerance for b in betas.values()):
        return validity("partly", reason, measured)
    return validity("no", reason, measured + ": the check cannot fail on these drafts")


def efficiency_validity(rows, gamma: int) -> tuple[str, str]:
    """Engine efficiency's condition: the SD rows' counted draft calls per block (``draft_calls / target_calls``) at
    least ``EFFICIENCY_MIN_CALLS`` × ``gamma``, the draft calls per block the prediction prices."""
    import pandas as pd

    sd = pd.DataFrame(rows)
    lacking = {"method", "draft_calls", "target_calls"} - set(sd.columns)
    if len(sd) and lacking:
        raise ValueError(f"efficiency_validity reads the speed rows' {sorted(lacking)}, which these rows lack")
    sd = sd[sd.method != "autoregressive"] if len(sd) else sd
    per_block = float(sd.draft_calls.sum() / sd.target_calls.sum()) if len(sd) else float("nan")
    measured = (
        f"the engine made {per_block:.2f} draft calls per block at γ = {gamma} (the prediction prices {gamma}; needs"
        f" ≥ {EFFICIENCY_MIN_CALLS:.0%} of it)"
    )
    reason = ENGINE_VALIDITY["engine efficiency"][1].removeprefix("yes: ")
    if per_block >= EFFICIENCY_MIN_CALLS * gamma:
        return validity("yes", reason, measured)
    return validity("no", reason, measured + ": the prediction prices draft calls the engine never made")


def findings_from_results(
    profile: str = "tiny", root=None, pair: str = "default", strict: bool = True, projection: bool = False
) -> list[Verdict]:
    """Notebook 01's findings on a results folder (``root/<profile>``, default ``results.RESULTS``): ``iid_verdict``
    on the τ sweep (``tau_vs_gamma.csv``) of the profile's current weights (its largest prompt set), and
    ``engine_verdict`` of ``pair`` (``engine_efficiency.csv`` with its per-prompt ``engine_speed_rows.csv``).
    Raises ``ValueError`` when a table holds no row of the current weights. ``strict``: the caller's profile's
    strictness (``harness.Profile.strict``; the core does not know profiles)."""
    import pathlib

    import pandas as pd

    from specdec import results
    from specdec.zoo.models import load_profile, pair_weights

    folder = pathlib.Path(root or results.RESULTS) / profile
    current = {pair_weights(profile, name) for name in load_profile(profile)["pairs"]}
    sweep = pd.read_csv(folder / "tau_vs_gamma.csv", dtype=results.DIGEST_DTYPES)
    sweep = sweep[sweep.weights.isin(current)]
    if sweep.empty:
        raise ValueError(f"{folder / 'tau_vs_gamma.csv'} holds no row of the current weights")
    largest = sweep.groupby(["prompts", "max_new_tokens"]).size().idxmax()
    sweep = sweep[(sweep.prompts == largest[0]) & (sweep.max_new_tokens == largest[1])]

    eff = pd.read_csv(folder / "engine_efficiency.csv", dtype=results.DIGEST_DTYPES)
    # the speed rows of the summary row's own settings (token budget and repeats are keys too)
    keys = ["pair", "weights", "prompts", "gamma", "device", "max_new_tokens", "repeats", "latency_repeats"]
    eff = eff[(eff.pair == pair) & (eff.weights == pair_weights(profile, pair))]
    if eff.empty:
        raise ValueError(f"{folder / 'engine_efficiency.csv'} holds no row of pair {pair!r} at its current weights")
    last = eff.iloc[-1]
    timed = pd.read_csv(folder / "engine_speed_rows.csv", dtype=results.DIGEST_DTYPES)
    timed = timed[(timed[keys] == last[keys]).all(axis=1)]
    engine = engine_verdict(timed.to_dict("records"), int(last.gamma), last.latency_ratio, last.verify_cost)
    machine = f"measured walltime, {last.device}; c {last.latency_ratio:.2f}, verify {last.verify_cost:.2f} steps"
    seeded = seed_rows(folder)  # the drafts' training seeds k > 0, where their rows are
    speeds = speed_frames(timed, seeded, load_profile(profile)["pairs"][pair]["draft"])
    cpu = measured_speed_verdict(timed.to_dict("records"), machine=machine)
    projected = projected_speed_verdict(timed.to_dict("records"), seeds={k: f for k, f in speeds.items() if k})
    from specdec.speed import gpu_rows

    gpu = gpu_rows()
    units = gpu_speed_units(gpu["gpu_peer_real_sizes"], gpu["gpu_latency_real_sizes"])
    predicted = float(last.expected_speedup_refined)
    speed = engine_speed_verdict(units, cpu, predicted, projected, pair=f"the {profile} pair")
    iid = iid_over_seeds(sweep_frames(sweep, seeded))
    validities = {
        "i.i.d. acceptance": iid_validity(pd.concat(list(sweep_frames(sweep, seeded).values()), ignore_index=True)),
        "engine efficiency": efficiency_validity(timed.to_dict("records"), int(last.gamma)),
        "engine speed": speed_validity(units, predicted, pair=f"the {profile} pair"),
    }
    found = judge_all([iid, engine, speed], validities, strict=strict)
    # ``projection``: also the labelled projection, per training seed (the docs' seeds table; never a board row)
    return found + [replace(projected, name="engine speed, projection")] if projection else found


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "ENGINE_EFFICIENCY_GOAL",
    "ENGINE_VALIDITY",
    "IID_TOLERANCE",
    "SEED_TABLE",
    "SPEED_CLAIM",
    "SPEED_PAPER",
    "SPEED_ROOM",
    "engine_speed_verdict",
    "engine_verdict",
    "findings_from_results",
    "iid_verdict",
    "priced_speed_verdict",
    "speed_frames",
    "speed_validity",
    "sweep_frames",
]
