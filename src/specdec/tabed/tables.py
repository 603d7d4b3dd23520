"""TABED's paper numbers and table layouts: our runs beside the paper's Tables 1-3 and 10-14, and the thresholds.

``runs`` picks the rows of one setting from a runs frame (``experiments``); ``block_table`` averages τ per scenario
and turn in the layout of the paper's Tables 1 / 10-14, ``group_means`` per group (Table 2), ``rest_table`` per kind
of second turn; ``paper_table`` / ``pair_paper_table`` / ``paper_group_table`` / ``paper_window_table`` read the
paper's numbers (``data/paper/tabed_block_efficiency.csv``, ``tabed_table3_window.csv``); ``pair_setting`` names the
paper's table a LLaVA pair of a profile compares with. ``weight_series`` / ``mean_weight_table`` read the MT*
weights a run logged (Fig. 3). ``rank_counts``, ``paper_top_two_share`` / ``paper_max_shortfall`` (T2) and
``paper_window_tolerance`` (T5) compute from the paper's tables the thresholds ``specdec.tabed.findings`` holds our
estimates to. ``tabed_expected_speedups`` / ``tabed_headline_verdict`` recompute the paper's headline 1.74x from its
Tables 1 and 6 through Eq. (1) (notebook 01); ``tabed_latency_ratios`` reads Table 6.
"""

from __future__ import annotations

import json
import re

import pandas as pd

from specdec import results, validate
from specdec.bench import expected_speedup
from specdec.harness.profile import Profile
from specdec.tabed.captioners import CAPTIONER
from specdec.tabed.sources import DEFAULT_PAIR, llava_pair, zoo_for  # noqa: F401 (tables.llava_pair)
from specdec.validate import reads_frame
from specdec.verdict import FAILS, HOLDS, SANITY, Verdict
from specdec.vlm import dialogues, scenes

TABLE1 = ["M", "T", "MT", "MT*"]
ALL_METHODS = ["M", "T", "C", "P", "MT", "MT*", "MTCP", "MTCP*"]
PAPER_SETTING = dict(draft_type="LLaVA-1.5", draft_size="68M", target="LLaVA-1.5 7B")


T2_METHODS = ("M", "T", "MT", "MT*")


def _cells(table: pd.DataFrame) -> pd.DataFrame:
    return table[[d != "Avg." for d in table.index.get_level_values(2)]]


def rank_counts(table: pd.DataFrame, method: str, tol: float = 0.0) -> tuple[int, int]:
    """``(cells where method is best or second best, cells)``: at most one method strictly better (by > tol)."""
    cells = _cells(table)
    better = (cells.sub(cells[method], axis=0) > tol).sum(axis=1)
    return int((better <= 1).sum()), len(cells)


def paper_cells(methods, setting: dict | None = PAPER_SETTING) -> pd.DataFrame:
    """The paper's cells of ``setting`` that T1-T4 compare (no ``Avg.``, no NLP first turn); all NaN where the
    paper has no table for it."""
    table = pair_paper_table(list(methods), setting)
    table = table[[d != "Avg." for d in table.index.get_level_values(2)]]
    return table[[not (g == "nlp" and t == 1) for t, g, _ in table.index]]


def threshold_setting(setting: dict | None) -> dict:
    """Where a default threshold comes from: ``setting``'s table, else (the paper has none) Table 10's."""
    return setting if paper_table_name(setting) else PAPER_SETTING


def paper_top_two_share(methods=T2_METHODS, method: str = "MT*", setting: dict | None = PAPER_SETTING) -> float:
    """The share of the paper's cells of ``setting`` (default Table 10; benchmark and OOD first turns, benchmark
    and NLP second turns) where ``method`` is best or second best among ``methods``; NaN where it has none."""
    if not paper_table_name(setting):
        return float("nan")
    top2, n = rank_counts(paper_cells(methods, setting), method)
    return top2 / n


def paper_max_shortfall(methods=T2_METHODS, method: str = "MT*", setting: dict | None = PAPER_SETTING) -> float:
    """The largest relative gap ``(best − method) / best`` in any cell of ``setting``'s table (default Table 10):
    how far behind the best the paper still calls MT* 'close to the best' (Table 10: 1.7%, Spot first turn);
    NaN where the paper has no table for ``setting``."""
    cells = paper_cells(methods, setting)
    return float(((cells.max(axis=1) - cells[method]) / cells.max(axis=1)).max())


def paper_window_deviations() -> pd.DataFrame:
    """The paper's Table 3 as signed deviations: group (benchmark, OOD) x h ∈ {1, 4, 16} of
    ``(τ(h) − τ(ALL)) / τ(ALL)`` on the group means (OOD: h = 1 −0.99%, h = 4 +0.99%)."""
    table = paper_window_table()
    ood = [d for d in table.index if d in ("PSV", "VIST")]
    groups = pd.DataFrame({"benchmark": table.drop(index=ood).mean(), "ood": table.loc[ood].mean()}).T
    return groups.drop(columns="ALL").sub(groups["ALL"], axis=0).div(groups["ALL"], axis=0)


def paper_window_tolerance(signed: bool = False) -> float:
    """The paper's Table 3 spread: max over h and groups of ``|τ(h) − τ(ALL)| / τ(ALL)`` (0.99%: OOD, h = 1 and
    h = 4); ``signed``: the most any h *beats* ALL by, ``max (τ(h) − τ(ALL)) / τ(ALL)`` (0.99%: OOD, h = 4), the
    margin the paper still reads as "no clear winner"."""
    deviations = paper_window_deviations()
    return float((deviations if signed else deviations.abs()).max().max())


@reads_frame
def runs(frame: pd.DataFrame, *, gamma: int = 5, window="ALL", criterion: str = "kl", captioner: str = CAPTIONER):
    """The rows of one setting (non-adaptive methods ignore window / criterion, non-caption ones the captioner)."""
    frame = frame[frame.method != "AR"]
    adaptive = frame.method.str.endswith("*")
    caption = frame.method.str.contains("C")
    keep = frame.gamma.astype(int) == gamma
    keep &= ~adaptive | ((frame.window.astype(str) == str(window)) & (frame.criterion == criterion))
    keep &= ~caption | (frame.captioner == captioner)
    return frame[keep]


@reads_frame
def block_table(frame: pd.DataFrame, methods, turns=(1, 2)) -> pd.DataFrame:
    """Mean τ per (turn, dataset) x method, with the paper's dataset names and an ``Avg.`` of the benchmark
    datasets per turn (as in the paper's Table 10).

    ``turns`` are the turns laid out (1 = first, 2 = second): the frame's rows of other turns are left out, and
    a turn asked for that the frame lacks (the paper profile has no second turns yet) gets the paper's rows of
    that turn, empty (NaN). ``turns=(1,)`` gives the first-turn table only, whatever the frame holds.
    """
    turns = tuple(turns)
    if not turns or not set(turns) <= {1, 2}:
        raise ValueError(f"turns must be a non-empty subset of (1, 2), got {turns!r}")
    frame = frame[frame.method.isin(methods) & frame.turn.isin(turns)].copy()
    frame["dataset"] = frame.scenario.map(scenes.PAPER_NAME)
    table = frame.pivot_table(
        index=["turn", "group", "dataset"], columns="method", values="block_efficiency", aggfunc="mean"
    ).reindex(columns=list(methods))  # a method with no run in these turns: NaN
    averages = []
    for turn in sorted(frame.turn.unique()):
        bench = table.loc[(turn, "benchmark")] if (turn, "benchmark") in table.index.droplevel(2) else None
        if bench is not None:
            averages.append(
                pd.DataFrame([bench.mean()], index=pd.MultiIndex.from_tuples([(turn, "benchmark", "Avg.")]))
            )
    table = pd.concat([table, *averages]).sort_index(level=[0, 1], sort_remaining=False)
    missing = [t for t in turns if t not in set(table.index.get_level_values(0))]
    if missing:  # a turn asked for but not run: the paper's rows, empty
        layout = paper_table(methods)
        table = pd.concat([table, layout[layout.index.get_level_values(0).isin(missing)] * float("nan")])
    order = {name: i for i, name in enumerate(list(scenes.PAPER_NAME.values()) + ["Avg."])}
    return table.iloc[
        sorted(
            range(len(table)),
            key=lambda i: (table.index[i][0], table.index[i][1] != "benchmark", order[table.index[i][2]]),
        )
    ]


@reads_frame
def rest_table(frame: pd.DataFrame, rests: dict[str, str], methods) -> pd.DataFrame:
    """Mean τ per kind of second turn (what its answer rests on, ``rests_on``) x method, with the number of requests
    and τ(T) − τ(M) where both ran: the second turns of ``block_table`` regrouped by follow-up instead of dataset."""
    frame = frame[(frame.turn.astype(int) == 2) & frame.method.isin(methods)]
    frame = frame.assign(rests_on=frame.row.map(rests)).dropna(subset=["rests_on"])
    table = frame.pivot_table(index="rests_on", columns="method", values="block_efficiency", aggfunc="mean")
    table = table.reindex(columns=list(methods))
    table["requests"] = frame.groupby("rests_on").row.nunique()
    if {"M", "T"} <= set(table.columns):
        table["T − M"] = table["T"] - table["M"]
    order = [k for k in (dialogues.IMAGE, dialogues.PREVIOUS, dialogues.TEXT_TASK) if k in table.index]
    return table.reindex(order).rename_axis("answer rests on")


def paper_table(methods, **setting) -> pd.DataFrame:
    """The paper's block efficiencies (Table 10 by default: LLaVA-1.5 68M draft, LLaVA-1.5 7B target) in the
    layout of ``block_table``."""
    paper = results.paper_numbers("tabed_block_efficiency")
    for method in methods:
        validate.choice("method of the paper's tables", method, sorted(set(paper.method)))
    setting = {**PAPER_SETTING, **setting}
    for k, v in setting.items():
        paper = paper[paper[k] == v]
    paper = paper[paper.method.isin(methods)].copy()
    paper["turn"] = paper.turn.map({"first": 1, "second": 2})
    paper["group"] = paper.dataset_group
    paper["block_efficiency"] = paper.block_efficiency.astype(float)
    table = paper.pivot_table(index=["turn", "group", "dataset"], columns="method", values="block_efficiency")
    return table[list(methods)]


def _proxy(profile: Profile) -> bool:
    """Whether the profile's default pair is the shipped proxy pair (``zoo.ShippedPairs``)."""
    return zoo_for(profile).proxy


def pair_setting(profile: str | Profile = "tiny", pair: str | None = None) -> dict | None:
    """The paper's rows a LLaVA pair compares with (``draft_type``, ``draft_size``, ``target`` of
    ``tabed_block_efficiency``): the tiny zoo's default pair, ``PAPER_SETTING`` (it stands in for Table 10's
    LLaVA-1.5 68M / 7B); a pair of a profile (default ``llava-7b``, as ``load_vlm_pair``), its ``setting`` in the
    profile (Tables 10-14), or ``None`` where it has none: the paper has no block efficiencies for that pair
    (``llava-13b``, ``llava-7b-160m``)."""
    profile = Profile.load(profile)
    if not pair and _proxy(profile):
        return dict(PAPER_SETTING)
    setting = llava_pair(profile, pair).get("setting")
    return dict(setting) if setting else None


def pair_sizes(profile: str | Profile = "tiny", pair: str | None = None) -> tuple[str, str]:
    """``(draft size, target size)`` of a LLaVA pair as Table 6 writes them (``"68M"``, ``"7B"``), read from the pair's
    hub ids (``mjbooo/lvlm160m-bf16`` -> 160M, ``llava-hf/llava-v1.6-vicuna-13b-hf`` -> 13B); the tiny zoo's default
    pair stands in for 68M / 7B (``PAPER_SETTING``)."""
    profile = Profile.load(profile)
    if not pair and _proxy(profile):
        return PAPER_SETTING["draft_size"], PAPER_SETTING["target"].split()[-1]
    spec = llava_pair(profile, pair)
    draft, target = re.search(r"(\d+)m", spec["draft"].lower()), re.search(r"(\d+)b", spec["target"].lower())
    if not draft or not target:
        raise ValueError(f"cannot read the sizes of pair {pair!r} from {spec['draft']!r} / {spec['target']!r}")
    return f"{draft.group(1)}M", f"{target.group(1)}B"


def pair_latency_ratio(profile: str | Profile = "tiny", pair: str | None = None) -> float | None:
    """The paper's T_q/T_p (Table 6, A6000) for the sizes of a pair's draft and target (``pair_sizes``): the paper
    timed LLaVA-1.5 7B / 13B with 68M / 160M drafts, and a LLaVA-NeXT pair of the same sizes takes that ratio.
    ``None`` where Table 6 has no such sizes."""
    draft_size, target_size = pair_sizes(profile, pair)
    table = tabed_latency_ratios()
    hit = table[(table.draft_size == draft_size) & (table.target_size == target_size)]
    return float(hit.latency_ratio_Tq_over_Tp.iloc[0]) if len(hit) else None


def paper_table_name(setting: dict | None = PAPER_SETTING) -> str | None:
    """The paper's table of ``setting`` (``"Table 10"`` ... ``"Table 14"``), ``None`` where it has none."""
    if not setting:
        return None
    paper = results.paper_numbers("tabed_block_efficiency")
    for k, v in setting.items():
        paper = paper[paper[k] == v]
    names = sorted(set(paper.table))
    if len(names) > 1:
        raise ValueError(f"setting {setting} matches several tables of the paper: {names}")
    return names[0] if names else None


def pair_paper_table(methods, setting: dict | None = PAPER_SETTING) -> pd.DataFrame:
    """``paper_table`` of ``setting`` (e.g. ``pair_setting(profile, pair)``); where the paper has no table for it
    (``None``, or no such rows), Table 10's layout with every cell NaN."""
    if paper_table_name(setting) is None:
        return paper_table(methods) * float("nan")
    return paper_table(methods, **setting)


def paper_group_table(methods, **setting) -> pd.DataFrame:
    """The paper's group means in the layout of ``group_means`` (Table 2 = the Table 10 averages: benchmark
    ``Avg.`` per turn, OOD = mean of PSV and VIST, NLP = mean of NQ and GSM8K)."""
    paper = paper_table(methods, **setting)
    out = {}
    for turn in (1, 2):
        if (turn, "benchmark", "Avg.") in paper.index:
            out[f"benchmark t{turn}"] = paper.loc[(turn, "benchmark", "Avg.")]
    for group in ("nlp", "ood"):
        rows = [i for i in paper.index if i[1] == group]
        if rows:
            out[group] = paper.loc[rows].mean()
    return pd.DataFrame(out).reindex(methods)


def paper_window_table(**setting) -> pd.DataFrame:
    """The paper's Table 3 (MT*, first turn): τ per dataset (rows) and window h (columns)."""
    paper = results.paper_numbers("tabed_table3_window")
    for key in setting:  # a pair setting (``pair_setting``); Table 3 is read by its draft size only
        validate.choice("setting key", key, list(PAPER_SETTING))
    size = setting.get("draft_size", PAPER_SETTING["draft_size"])
    paper = paper[paper.draft_size == validate.choice("draft size of Table 3", size, sorted(set(paper.draft_size)))]
    paper = paper.assign(block_efficiency=paper.block_efficiency.astype(float))
    return paper.pivot_table(index="dataset", columns="h", values="block_efficiency")


@reads_frame
def side_by_side(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One column pair per method: ``ours`` and ``paper``."""
    both = pd.concat({"ours": ours, "paper": paper.reindex(ours.index)}, axis=1)
    return both.swaplevel(0, 1, axis=1)[[(m, s) for m in ours.columns for s in ("ours", "paper")]].round(2)


@reads_frame
def group_means(frame: pd.DataFrame, methods) -> pd.DataFrame:
    """Mean τ per method over the groups of the paper's Table 2: benchmark first / second turn, OOD, NLP."""
    frame = frame[frame.method.isin(methods)]
    label = frame.group.where(frame.group != "benchmark", "benchmark t" + frame.turn.astype(str))
    label = label.where(frame.group != "nlp", "nlp")
    return (
        frame.assign(where=label)
        .pivot_table(index="method", columns="where", values="block_efficiency", aggfunc="mean")
        .reindex(methods)
    )


def spread_line(table: pd.DataFrame, what: str) -> str:
    """One sentence on a settings table (rows: groups, columns: the settings compared): the best setting per
    group and how far apart the settings are."""
    spread = (table.max(axis=1) - table.min(axis=1)) / table.mean(axis=1)
    best = table.idxmax(axis=1)
    return (
        f"{what}: best per group "
        + ", ".join(f"{g}: {b}" for g, b in best.items())
        + f"; settings differ by at most {100 * spread.max():.1f}% of τ within a group."
    )


# ------------------------------------------------------------------------------------------------- weights
def weight_series(run_row) -> tuple[list[float], list[bool]]:
    """Per generated token of one stored run: the weight of the multimodal row ``w_M / (w_M + w_T)`` in force
    when it was drafted, and whether it was an accepted draft token (else the target's correction / bonus).

    Static methods: M → 1, T → 0, MT → 0.5; adaptive ones read the per-block weights they logged."""
    accepted = json.loads(run_row["accepted"])
    logged = json.loads(run_row["weights"]) if isinstance(run_row["weights"], str) and run_row["weights"] else []
    fixed = {"M": 1.0, "T": 0.0}.get(run_row["method"], 0.5)
    n_tokens = int(run_row["new_tokens"])
    weights, from_draft = [], []
    for b, n_acc in enumerate(accepted):
        w = logged[b][0] / (logged[b][0] + logged[b][1]) if b < len(logged) else fixed
        weights += [w] * (n_acc + 1)
        from_draft += [True] * n_acc + [False]
    while len(weights) < n_tokens:  # the last call may have had no room for a draft (max_new_tokens)
        weights.append(weights[-1] if weights else fixed)
        from_draft.append(False)
    return weights[:n_tokens], from_draft[:n_tokens]


@reads_frame
def mean_weight_table(frame: pd.DataFrame, method: str = "MT*") -> pd.DataFrame:
    """Mean weight of the multimodal row over the blocks of ``method``'s runs, per scenario group and turn."""
    frame = frame[frame.method == method]
    means = [sum(w[0] for w in json.loads(ws)) / len(json.loads(ws)) for ws in frame.weights]
    label = frame.group.where(frame.group != "benchmark", "benchmark t" + frame.turn.astype(str))
    label = label.where(frame.group != "nlp", "nlp t" + frame.turn.astype(str))
    return frame.assign(w_M=means, where=label).groupby("where").w_M.agg(["mean", "min", "max", "count"])


# ---------------------------------------------------------------------------------------- Eq. (1) headline
TABED_GAMMA = 5
TABED_LATENCY_RATIO = 0.063  # Table 6: LLaVA-1.5 7B target, 68M draft, A6000


def tabed_table1_block_efficiency():
    """Table 1 cells (LLaVA-1.5 7B, 68M draft) with the block efficiency as a float."""
    df = results.paper_numbers("tabed_block_efficiency")
    df = df[df.in_main_table.fillna("").str.contains("Table 1")].copy()
    df["block_efficiency"] = df.block_efficiency.astype(float)
    return df


def tabed_expected_speedups(latency_ratio: float = TABED_LATENCY_RATIO, gamma: int = TABED_GAMMA):
    """Per method: mean of the benchmark ``Avg.`` cells of Table 1 over both turns, and Eq. (1) speedup.

    With ``T_q/T_p = 0.063`` and ``γ = 5`` MT* gives the paper's headline 1.74x.
    """
    df = tabed_table1_block_efficiency()
    avg = df[(df.dataset == "Avg.") & (df.dataset_group == "benchmark")]
    out = avg.groupby("method", sort=False).block_efficiency.mean().rename("mean_block_efficiency").to_frame()
    out["expected_speedup"] = [expected_speedup(t, gamma, latency_ratio) for t in out.mean_block_efficiency]
    return out.reset_index()


def tabed_latency_ratios():
    df = results.paper_numbers("tabed_table6_latency_ratio")
    df["latency_ratio_Tq_over_Tp"] = df.latency_ratio_Tq_over_Tp.astype(float)
    return df


def tabed_headline_verdict() -> Verdict:
    """Notebook 01 (a): the paper's headline 1.74x for MT* follows from its own Table 1 and Table 6 through
    Eq. (1). Exact arithmetic on printed numbers: the interval is the point, n the four methods."""
    table = tabed_expected_speedups().set_index("method")
    mt_star = float(table.loc["MT*", "expected_speedup"])
    holds = round(mt_star, 2) == 1.74
    return Verdict(
        "Eq. (1) headline",
        "MT*'s expected walltime speedup from Table 1's τ and Table 6's T_q/T_p is the headline 1.74x",
        mt_star,
        mt_star,
        mt_star,
        len(table),
        HOLDS if holds else FAILS,
        "1.74x",
        f"γ = {TABED_GAMMA}, T_q/T_p = {TABED_LATENCY_RATIO} (Table 6, 7B target, 68M draft).",
        validity="yes",
        validity_why="yes: arithmetic on the paper's own tables (a check of the transcription and of Eq. (1))",
        section=SANITY,
    )


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "ALL_METHODS",
    "PAPER_SETTING",
    "T2_METHODS",
    "TABED_GAMMA",
    "TABED_LATENCY_RATIO",
    "TABLE1",
    "block_table",
    "group_means",
    "mean_weight_table",
    "pair_latency_ratio",
    "pair_paper_table",
    "paper_group_table",
    "paper_window_table",
    "rest_table",
    "runs",
    "side_by_side",
    "spread_line",
    "tabed_expected_speedups",
    "tabed_headline_verdict",
    "tabed_latency_ratios",
    "weight_series",
]
