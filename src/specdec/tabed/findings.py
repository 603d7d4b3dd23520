"""TABED's findings T1-T5 as ``specdec.verdict.Verdict``s, decided on the tidy runs frame of ``tables.runs``.

Every method decodes the same requests, so methods are compared *paired by request* and the bootstrap resamples
requests (distinct ``request`` digests; ``row`` ids in a frame without them), never tokens; cell-level statistics
(ranks, window spreads) resample requests within their cell. T1b is also split by what a second turn's answer rests
on (``verdict_t1b_by_rest``). Thresholds default to the paper's own numbers (``data/paper``). ``findings_from_results``
reads the committed ``tabed_runs`` table (the scoreboard, notebook 90). The paper numbers quoted (and the thresholds
drawn from them) follow the model pair: ``setting`` (the pair's rows of ``tabed_block_efficiency``,
``tables.pair_setting(profile, pair)``; default ``tables.PAPER_SETTING``, Table 10) picks Table 10, 11, 12, 13 or
14. Where the paper has no table for the pair (``setting=None``) a verdict says so (``NO_NUMBER``) and its default
threshold is Table 10's, the setting of the paper's main text. The window table (Table 3, T5) exists for Table 10's
pair only.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from specdec import results
from specdec.harness.findings_cache import cached
from specdec.harness.profile import Profile
from specdec.tabed import conditions, seeds, speed
from specdec.tabed.data import load_suite, rests_on
from specdec.tabed.paired import cell_bootstrap as _cell_bootstrap
from specdec.tabed.paired import make_verdict as _verdict
from specdec.tabed.paired import paired as _paired
from specdec.tabed.paired import wide as _wide
from specdec.tabed.speed import verdict_speed
from specdec.tabed.tables import (
    PAPER_SETTING,
    T2_METHODS,
    pair_setting,
    paper_cells,
    paper_max_shortfall,
    paper_table_name,
    paper_top_two_share,
    runs,
    threshold_setting,
)
from specdec.tabed.window_findings import NO_NUMBER, PAPER_TABLE1, verdict_t5, verdict_t5_over_seeds
from specdec.tabed.windows import TINY_WHY, t5_validity, window_frames
from specdec.tabed.zoo import KEY, zoo_for
from specdec.validate import reads_frame
from specdec.verdict import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    Verdict,
    judge_all,
    sanity,
    validity,
)
from specdec.vlm.dialogues import IMAGE, PREVIOUS, TEXT_TASK


@reads_frame
def paper_scenarios(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the paper's scenarios: every cell but the text-only NQ / GSM8K *first* turns (the paper has
    them as second turns only; without an image every drafting method drafts the same tokens there)."""
    return frame[~((frame.group == "nlp") & (frame.turn.astype(int) == 1))]


def _all_of(name: str, claim: str, parts: list[tuple[Verdict, float, bool]], n: int, paper: str = "") -> Verdict:
    """A finding made of parts ``(verdict, threshold, greater)``: it holds if every part holds, does not hold if
    one part does not, else inconclusive. Estimate and interval are the smallest margin of a part over its
    threshold (its estimate − threshold, or threshold − estimate when the claim is 'below'), so > 0 is 'holds'."""

    def margin(v, t, g):
        return (v.estimate - t, v.low - t, v.high - t) if g else (t - v.estimate, t - v.high, t - v.low)

    margins = [margin(*p) for p in parts]
    statuses = [p[0].status for p in parts]
    status = FAILS if FAILS in statuses else HOLDS if all(s == HOLDS for s in statuses) else INCONCLUSIVE
    detail = "Parts: " + "; ".join(f"{p[0].name} {p[0].status}" for p in parts) + "."
    est, low, high = (min(m[i] for m in margins) for i in range(3))
    return Verdict(name, claim, est, low, high, n, status, paper, detail)


@reads_frame
def verdict_t1_parts(
    frame: pd.DataFrame, *, setting: dict | None = PAPER_SETTING, n_boot: int = 2000, seed: int = 0
) -> list[Verdict]:
    """T1a: M − T > 0 on first-turn benchmark requests (single- and multi-image); T1b: T − M > 0 on second
    turns (benchmark and text-only NLP follow-ups); T1c: T − M > 0 on the OOD five-image stories (PSV, VIST).
    Each is the mean paired difference of τ over the requests of its cells; the paper's is quoted from the table
    of ``setting``."""
    frame = paper_scenarios(frame)
    turn = frame.turn.astype(int)
    parts = [
        ("T1a", "M drafts better than T on first-turn benchmark tasks (τ(M) − τ(T) > 0)", "M", "T",
         (frame.group == "benchmark") & (turn == 1), [(1, "benchmark")]),
        ("T1b", "T drafts better than M on second turns (τ(T) − τ(M) > 0)", "T", "M", turn == 2,
         [(2, "benchmark"), (2, "nlp")]),
        ("T1c", "T drafts better than M on the OOD multi-image stories PSV, VIST (τ(T) − τ(M) > 0)", "T", "M",
         frame.group == "ood", [(1, "ood")]),
    ]  # fmt: skip
    paper, table = paper_cells(["M", "T"], setting), paper_table_name(setting)
    out = []
    for name, claim, a, b, where, wanted_cells in parts:
        est, low, high, n = _paired(frame[where], a, b, n_boot, seed)
        rows = paper[[(t, g) in wanted_cells for t, g, _ in paper.index]]
        quote = f"{float((rows[a] - rows[b]).mean()):+.2f} τ ({table}, cell mean)" if table else NO_NUMBER
        detail = "" if n else "No such requests in this frame: not tested."
        out.append(_verdict(name, claim, est, low, high, n, paper=quote, detail=detail))
    return out


@reads_frame
def verdict_t1(
    frame: pd.DataFrame,
    *,
    setting: dict | None = PAPER_SETTING,
    n_boot: int = 2000,
    seed: int = 0,
    parts: list[Verdict] | None = None,
) -> Verdict:
    """T1 (scenario-specific fluctuation): T1a, T1b and T1c all hold (``verdict_t1_parts``, of ``setting``)."""
    parts = parts or verdict_t1_parts(frame, setting=setting, n_boot=n_boot, seed=seed)
    return _all_of(
        "T1",
        "neither drafting method wins everywhere: M leads on first-turn benchmark tasks, T on second turns and "
        "OOD (value: the smallest of the three differences)",
        [(p, 0.0, True) for p in parts],
        sum(p.n for p in parts),
        paper=", ".join(f"{p.name} {p.paper.split()[0]}" for p in parts) if paper_table_name(setting) else NO_NUMBER,
    )


@reads_frame
def verdict_t1b_by_rest(
    frame: pd.DataFrame,
    rests: dict[str, str] | None,
    *,
    setting: dict | None = PAPER_SETTING,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[Verdict]:
    """T1b split by what a second turn's answer rests on (``rests``: ``{row id: kind}``, ``data.rests_on`` of the
    requests), the paper's reading of its Table 1 (Sec. 4: text-only drafting surpasses multimodal drafting in
    later turns "particularly in tasks dependent on prior responses and independent reasoning tasks"):

    - T1b-prev: τ(T) − τ(M) > 0 on second turns that depend on the prior conversation, the paper's "tasks dependent
      on prior responses": follow-ups that rest on the first answer (``dialogues.PREVIOUS``) *and* follow-ups about
      the image (``dialogues.IMAGE``) alike (each kind's own mean is in ``detail``);
    - T1b-text: τ(T) − τ(M) > 0 on independent text tasks after an image conversation (NQ / GSM8K second turns).

    The paper gives no number per kind of follow-up; T1b-text quotes its NLP second-turn cells (the table of
    ``setting``). Without ``rests`` (or without such requests) a part is inconclusive with n = 0."""
    turn2 = frame[frame.turn.astype(int) == 2]
    kind = turn2.row.map(rests or {})
    paper, table = paper_cells(["M", "T"], setting), paper_table_name(setting)
    nlp = paper[[(t, g) == (2, "nlp") for t, g, _ in paper.index]]
    prev_quote = "no number per kind of follow-up (Sec. 4: 'particularly in tasks dependent on prior responses')"
    prev_quote = prev_quote if table else NO_NUMBER
    nlp_quote = f"{float((nlp['T'] - nlp['M']).mean()):+.2f} τ ({table}, NLP second-turn cells)" if table else NO_NUMBER
    parts = [
        ("T1b-prev", "T drafts better than M on second turns that depend on the prior conversation (follow-ups on"
         " the first answer or the image; τ(T) − τ(M) > 0)", (PREVIOUS, IMAGE), prev_quote),
        ("T1b-text", "T drafts better than M on text tasks after an image conversation (τ(T) − τ(M) > 0)",
         (TEXT_TASK,), nlp_quote),
    ]  # fmt: skip
    out = []
    for name, claim, which, quote in parts:
        est, low, high, n = _paired(turn2[kind.isin(which)], "T", "M", n_boot, seed)
        detail = "" if n else "No second turn of this kind (or no follow-up kinds given): not tested."
        if n and len(which) > 1:
            each = [(k, _paired(turn2[kind == k], "T", "M", 1, seed)) for k in which]
            detail = "By kind: " + ", ".join(f"{k} {e[0]:+.3f} (n {e[3]})" for k, e in each if e[3]) + "."
        out.append(_verdict(name, claim, est, low, high, n, paper=quote, detail=detail))
    return out


@reads_frame
def verdict_t2(
    frame: pd.DataFrame,
    *,
    min_share: float | None = None,
    methods=T2_METHODS,
    setting: dict | None = PAPER_SETTING,
    n_boot: int = 2000,
    seed: int = 0,
) -> Verdict:
    """T2 (MT* is robust): the share of scenario cells (scenario x turn of the paper's scenarios) where MT* is
    best or second best among ``methods`` by mean τ (at most one method strictly higher), with the interval from
    resampling requests within each cell. Holds if the lower bound reaches ``min_share`` (default: the share in
    the paper's table of ``setting``; Table 10's is 1.0: 'best or second best across all scenarios')."""
    table = paper_table_name(setting)
    paper_share = paper_top_two_share(methods, setting=threshold_setting(setting))
    fallback = "" if table or min_share is not None else f" Threshold: the share in {PAPER_TABLE1}."
    min_share = paper_share if min_share is None else min_share
    frame = paper_scenarios(frame[frame.method.isin(methods)])
    wide, info = _wide(frame)
    methods = [m for m in methods if m in wide]
    wide = wide[methods].dropna()
    by_cell = info.loc[wide.index].groupby(["scenario", "turn"]).groups if len(wide) else {}
    cells = [wide.loc[by_cell[c]].to_numpy() for c in sorted(by_cell)]
    k = methods.index("MT*") if "MT*" in methods else None

    def share(cs):
        return float(np.mean([((c.mean(0) > c.mean(0)[k]).sum() <= 1) for c in cs]))

    est, low, high = _cell_bootstrap(cells, share, n_boot=n_boot, seed=seed) if k is not None else (np.nan,) * 3
    return _verdict(
        "T2",
        f"MT* is best or second best among {', '.join(methods)} in at least {min_share:.0%} of scenario cells",
        est,
        low,
        high,
        len(wide),
        threshold=min_share - 1e-9,  # 'reaches': low ≥ min_share holds, high < min_share does not
        paper=f"{paper_share:.0%} of the {len(paper_cells(methods, setting))} cells of {table}" if table else NO_NUMBER,
        detail=f"{len(cells)} cells (scenario x turn; NLP first turns left out: every method ties there).{fallback}",
    )


@reads_frame
def verdict_t3_parts(
    frame: pd.DataFrame,
    *,
    close: float | None = None,
    setting: dict | None = PAPER_SETTING,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[Verdict]:
    """On the OOD requests (PSV, VIST). T3a: τ(MT*) − τ(MT) > 0 (the paper: 'MT* significantly outperforms MT'
    there); T3b: MT*'s relative gap to the best single method (M or T, the better one per OOD scenario, chosen
    again in every resample), ``(τ(MT*) − τ(best)) / τ(best)`` averaged over the OOD scenarios, is above
    ``−close`` (default: ``paper_max_shortfall`` of ``setting``, the largest gap the paper still calls 'close to
    the best'; Table 10's where the paper has no table for ``setting``)."""
    table = paper_table_name(setting)
    fallback = "" if table or close is not None else f" Threshold: the largest gap in {PAPER_TABLE1}."
    close = paper_max_shortfall(setting=threshold_setting(setting)) if close is None else close
    ood = frame[frame.group == "ood"]
    est, low, high, n = _paired(ood, "MT*", "MT", n_boot, seed)
    paper = paper_cells(["M", "T", "MT", "MT*"], setting)
    paper_ood = paper[[g == "ood" for _, g, _ in paper.index]]
    none = "" if n else "No OOD requests in this frame: not tested."
    t3a = _verdict(
        "T3a",
        "on OOD, the adaptive MT* drafts better than the static MT (τ(MT*) − τ(MT) > 0)",
        est,
        low,
        high,
        n,
        paper=f"{(paper_ood['MT*'] - paper_ood['MT']).mean():+.2f} τ ({table})" if table else NO_NUMBER,
        detail=none,
    )
    wide, info = _wide(ood[ood.method.isin(["M", "T", "MT*"])])
    wide = wide.reindex(columns=["M", "T", "MT*"]).dropna()
    groups = info.loc[wide.index].groupby("scenario").groups if len(wide) else {}
    cells = [wide.loc[groups[s]].to_numpy() for s in sorted(groups)]

    def gap(cs):
        means = [c.mean(0) for c in cs]
        return float(np.mean([(m[2] - max(m[0], m[1])) / max(m[0], m[1]) for m in means]))

    est, low, high = _cell_bootstrap(cells, gap, n_boot=n_boot, seed=seed)
    best = paper_ood[["M", "T"]].max(axis=1)
    singles = sorted(set(paper_ood[["M", "T"]].idxmax(axis=1))) if table else []
    single = f"{singles[0]} is the best single there" if len(singles) == 1 else "the best single per dataset"
    same = int((wide["MT*"] == wide["T"]).sum()) if len(wide) else 0
    point = (
        f" MT* equals T's τ on {same} of {len(wide)} OOD requests (it keeps T's drafts block for block), so the"
        " gap to T is 0 in every resample and the interval is a point."
        if len(wide) and same == len(wide)
        else ""
    )
    t3b = _verdict(
        "T3b",
        f"on OOD, MT* is within {close:.1%} of the best single method (relative gap > −{close:.3f})",
        est,
        low,
        high,
        len(wide),
        threshold=-close,
        paper=f"{((paper_ood['MT*'] - best) / best).mean():+.1%} ({table}; {single})" if table else NO_NUMBER,
        detail=(none + fallback + point).strip(),
    )
    return [t3a, t3b]


@reads_frame
def verdict_t3(
    frame: pd.DataFrame,
    *,
    close: float | None = None,
    setting: dict | None = PAPER_SETTING,
    n_boot: int = 2000,
    seed: int = 0,
) -> Verdict:
    """T3: T3a and T3b both hold (``verdict_t3_parts``, of ``setting``)."""
    close = paper_max_shortfall(setting=threshold_setting(setting)) if close is None else close
    a, b = verdict_t3_parts(frame, close=close, setting=setting, n_boot=n_boot, seed=seed)
    v = _all_of(
        "T3",
        "out of distribution MT* beats the static MT and stays close to the best single method "
        "(value: the smaller margin of T3a, T3b over their thresholds)",
        [(a, 0.0, True), (b, -close, True)],
        a.n,
        paper=f"T3a {a.paper.split()[0]}, T3b {b.paper.split()[0]}" if paper_table_name(setting) else NO_NUMBER,
    )
    point = b.detail[b.detail.find("MT* equals") :] if "MT* equals" in b.detail else ""
    return replace(v, detail=f"{v.detail} {point}".strip())


@reads_frame
def verdict_t4(
    frame: pd.DataFrame, *, setting: dict | None = PAPER_SETTING, n_boot: int = 2000, seed: int = 0
) -> Verdict:
    """T4 (more drafting methods help): τ(MTCP*) − τ(MT*) > 0 as the paper weighs it, a mean over cells (scenario x
    turn) of each cell's mean paired difference, bootstrap within cells; the paper's is quoted from the table of
    ``setting``; the mean over all requests (which weighs big cells more) is in ``detail``."""
    frame = paper_scenarios(frame)
    all_est, all_low, all_high, n = _paired(frame, "MTCP*", "MT*", n_boot, seed)
    wide, info = _wide(frame[frame.method.isin(["MT*", "MTCP*"])])
    if n and {"MT*", "MTCP*"} <= set(wide.columns):
        wide = wide[["MTCP*", "MT*"]].dropna()
        keys = info.loc[wide.index].scenario.astype(str) + " t" + info.loc[wide.index].turn.astype(str)
        cells = [wide[keys == k].to_numpy() for k in sorted(set(keys))]
        est, low, high = _cell_bootstrap(
            cells, lambda cs: float(np.mean([(c[:, 0] - c[:, 1]).mean() for c in cs])), n_boot=n_boot, seed=seed
        )
        detail = (
            f"Mean over {len(cells)} cells (scenario x turn) of the per-cell mean, as the paper's cell mean; over all"
            f" {n} requests: {all_est:+.3f} [{all_low:+.3f}, {all_high:+.3f}]."
        )
    else:
        est, low, high = all_est, all_low, all_high
        detail = "No request run with both MT* and MTCP* in this frame: not tested."
    paper, table = paper_cells(["MT*", "MTCP*"], setting), paper_table_name(setting)
    return _verdict(
        "T4",
        "adding caption (C) and pooled (P) drafts helps: τ(MTCP*) − τ(MT*) > 0, mean over cells",
        est,
        low,
        high,
        n,
        paper=f"{(paper['MTCP*'] - paper['MT*']).mean():+.3f} τ ({table}, cell mean)" if table else NO_NUMBER,
        detail=detail,
    )


@reads_frame
def findings(
    frame: pd.DataFrame,
    window_frame: pd.DataFrame | None = None,
    setting: dict | None = PAPER_SETTING,
    rests: dict[str, str] | None = None,
    **bootstrap,
) -> list[Verdict]:
    """T1a-c, T1, T1b-prev / -text, T2, T3a-b, T3, T4, T5, T-speed on one setting's runs (``frame``), against the
    paper's table of ``setting`` (the model pair's, ``tables.pair_setting``); T1b by kind of follow-up with ``rests``
    (``data.rests_on`` of the requests); T5 on ``window_frame`` (runs of several windows; default ``frame``, where
    it is inconclusive unless ``frame`` holds several windows)."""
    t1 = verdict_t1_parts(frame, setting=setting, **bootstrap)
    t3 = verdict_t3_parts(frame, setting=setting, **bootstrap)
    return [
        *t1,
        verdict_t1(frame, setting=setting, parts=t1, **bootstrap),
        *verdict_t1b_by_rest(frame, rests, setting=setting, **bootstrap),
        verdict_t2(frame, setting=setting, **bootstrap),
        *t3,
        verdict_t3(frame, setting=setting, **bootstrap),
        verdict_t4(frame, setting=setting, **bootstrap),
        verdict_t5(frame if window_frame is None else window_frame, setting=setting, **bootstrap),
        replace(verdict_speed(frame, setting=setting, **bootstrap), regime=speed.regime_label()),
    ]


@cached
def findings_from_results(profile: str | Profile = "tiny", windows=(1, 4, 16, "ALL"), root=None) -> list[Verdict]:
    """``findings`` on the committed ``results/<profile>/tabed_runs.csv`` with the notebooks' default settings
    (γ = 5, h = ALL, criterion KL, ``captioners.CAPTIONER``) and the paper's table of the profile's default pair;
    T5 on MT* at every window in ``windows``, on the tiny profile of Table 3's own pair (``window_frames``, every
    training seed); T1-T4 over the draft's training seeds (``seeds.seed_frames``); T1b by kind of follow-up.
    ``root``: the results folder (default ``results.RESULTS``; the scoreboard passes ``results.COMMITTED``)."""
    profile = Profile.load(profile)
    results.require_tables(profile.name, root or results.RESULTS, {"tabed_runs": "10_tabed_benchmark"})
    stored = results.ResultStore(profile.name, "tabed_runs", KEY, root=root).frame()
    frame = runs(stored, gamma=5, window="ALL", criterion="kl")
    by_window = pd.concat([runs(stored, gamma=5, window=h, criterion="kl") for h in windows])
    rests = None
    if profile.data_source == "generated":  # the paper's second turns need the target's first answers: T1b untested
        n = 1 + max(int(r.rsplit("-", 1)[1]) for r in frame.row)
        rests = rests_on(load_suite(profile, n, turns=(2,)))
    setting = pair_setting(profile)
    found = findings(frame, by_window[by_window.method == "MT*"], setting=setting, rests=rests)
    seeded = seeds.seed_frames(profile, root)  # empty where the zoo has no training seeds
    if seeded:  # T1-T4 rest on the draft: each of its training seeds, and pooled
        over = seeds.findings_over_seeds(lambda f: findings(f, f.iloc[:0], setting, rests), frame, seeded, setting)
        found = [next((o for o in over if o.name == v.name), v) for v in found]
    long_pair = window_frames(profile, windows, root)  # empty where the zoo has no window pair
    if long_pair:  # Table 3 on the pair built for it (windows.WINDOW_PAIR), every training seed
        found = [verdict_t5_over_seeds(long_pair) if v.name == "T5" else v for v in found]
    return board_reading(found, profile, root, stored, long_pair=bool(long_pair))


def board_reading(verdicts: list[Verdict], profile="tiny", root=None, stored=None, long_pair=None) -> list[Verdict]:
    """``verdicts`` (a notebook's or the board's) judged as the scoreboard judges them: each finding's validity
    measured on the profile's own runs (``validities``: the ``tabed_runs`` rows of ``stored``, default those of
    ``root`` over the committed ones; T5 from Table 3's own pair, ``windows.t5_validity``, where ``long_pair``, default
    the shipped profile), and T3b / T3 as sanity checks where they hold by construction (``by_construction``)."""
    profile = Profile.load(profile)
    proxy = zoo_for(profile).proxy
    long_pair = proxy if long_pair is None else long_pair
    if stored is None:
        stored = results.ResultStore(profile.name, "tabed_runs", KEY, root=root, base=results.COMMITTED).frame()
    frame = runs(stored, gamma=5, window="ALL", criterion="kl") if len(stored) else stored
    found = validities(frame, stored, proxy)
    if long_pair:
        found["T5"] = t5_validity(root)
    judged = judge_all(verdicts, found, strict=profile.strict)
    return by_construction(judged, frame) if proxy else judged


def validities(frame: pd.DataFrame, stored: pd.DataFrame, proxy: bool) -> dict[str, tuple[str, str]]:
    """Every finding's ``(validity, why)`` from its measured condition (``conditions``) on one setting's runs
    (``frame``, ``runs`` of ``stored``): on the shipped proxies (``proxy``) a condition that holds gives ``partly``
    (tiny models stand in) and M's draft is read from its training log; on the paper's own models (another zoo) it
    gives ``yes``, and a condition this profile's rows cannot measure says so (``conditions.NOT_MEASURED``)."""
    why, met = (TINY_WHY, "partly") if proxy else (PAPER_MODELS_WHY, "yes")
    if frame.empty:
        return dict.fromkeys(NAMES, validity("partly", why, f"{conditions.NOT_MEASURED}: no runs"))
    heldout = conditions.draft_heldout() if proxy else None
    t1b = conditions.t1b_validity(frame, why) if proxy else conditions.t1b_validity(frame, why, met)
    t4 = conditions.t4_validity(stored, why, met) if proxy else validity("partly", why, UNMEASURED_T4)
    t1a, t1c = conditions.t1a_validity(heldout, why, met), conditions.t1c_validity(frame, heldout, why, met)
    t3a = conditions.t3a_validity(frame, why, met)
    found = {
        "T1a": t1a,
        "T1b": t1b,
        "T1b-prev": t1b,
        "T1c": t1c,
        "T1": conditions.combined(t1b, t1a, t1c, why=why),
        "T1b-text": conditions.t1b_text_validity(frame, heldout, why, met),
        "T2": conditions.t2_validity(frame, why, met),
        "T3a": t3a,
        "T3b": t3a,
        "T3": t3a,
        "T4": t4,
        "T5": validity("partly", why, UNMEASURED_T5),
        "T-speed": conditions.t_speed_validity(frame, why, met),
    }
    return found


def by_construction(found: list[Verdict], frame: pd.DataFrame) -> list[Verdict]:
    """T3b and T3 as sanity checks where MT* equals T's τ on every OOD request of ``frame``
    (``conditions.t3_by_construction``): T3b then holds by construction and T3 is T3a's reading."""
    same, n = conditions.t3_by_construction(frame)
    if not n or same < n:
        return found
    why = f" By construction: MT* equals T's τ on {same} of {n} OOD requests, so T3b cannot fail (a sanity check);"
    why += " T3 is then T3a, the finding."
    return [replace(sanity(v), detail=v.detail + why) if v.name in ("T3b", "T3") else v for v in found]


PAPER_MODELS_WHY = "the profile's own models (the paper's ids) on its own runs"
NAMES = ("T1a", "T1b", "T1b-prev", "T1c", "T1", "T1b-text", "T2", "T3a", "T3b", "T3", "T4", "T5", "T-speed")
UNMEASURED_T4 = f"{conditions.NOT_MEASURED}: C with true captions needs the scene generator's captions"
UNMEASURED_T5 = (
    f"{conditions.NOT_MEASURED}: T5 is read on Table 3's own long-answer pair (windows.t5_validity), which this"
    " profile's zoo does not have"
)
