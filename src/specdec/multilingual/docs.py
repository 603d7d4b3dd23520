"""The multilingual study's generated doc blocks (``scripts/update_docs_tables.py`` splices them into
``docs/papers/multilingual.md``): M2 and M2-linear over the training seeds of Fig. 4's grid (``m2_seeds_block``),
M1, M1-τ and M3 over the seeds of the pairs' drafters (``ml_pair_seeds_block``) and the minutes each seed's
drafters took (``m2_seed_training_block``), and the *Proxy conditions* blocks: τ of each P-F drafter by input /
output language class beside the held-out phrasebook losses (``m3_block``, M3 rows of ``proxy_conditions.csv``) and
the passes each finetune made and its held-out prose loss (``m_pf_block``, M-PF rows, ``ml_training.csv``). Each
reads the committed results (``root``: a results folder, default ``results.COMMITTED``) and gives every finding the
scoreboard's verdict (``board_verdicts``)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import pandas as pd

from specdec import results, verdict, zoo
from specdec.markdown import md_table, span
from specdec.multilingual import drafter_verdicts, findings, scaling_verdicts
from specdec.multilingual.seeds import GRID, PAIR_DRAFTERS

M2_CLAIMS = {"M2": "slope of τ per decade of tokens > 0", "M2-linear": "|bend| < 1"}


def board_verdicts(rows: list[dict], root: pathlib.Path | None = None) -> list[dict]:
    """``rows`` (of ``verdict.seed_table``) with each ``verdict`` the scoreboard's for that finding
    (``multilingual.findings.findings_from_results``: the seeds' pooled status judged with the finding's measured
    validity), so that the paper page never reads a finding differently from the board (issue 44)."""
    board = {v.name: v.status for v in findings.findings_from_results("tiny", root or results.COMMITTED)}
    return [{**r, "verdict": board.get(r["finding"], r["verdict"])} for r in rows]


def m2_seeds_block(root: pathlib.Path | None = None) -> str:
    """The M2 table over training seeds and the sentences it supports (no seed reverses / which does; the largest
    spread of τ over seeds at one budget)."""
    frames, grid = findings.m2_frames("tiny", root or results.COMMITTED)
    table = scaling_verdicts.m2_seed_table(frames, grid)
    seeds = [c for c in table.columns if c.startswith("seed ")]
    rows = board_verdicts(table.to_dict("records"), root)
    for row in rows:
        name = row["finding"].split(" ")[0]
        row["finding"] = f"{row['finding']} ({M2_CLAIMS[name]})" if name in M2_CLAIMS else row["finding"]
    columns = ["finding", *seeds, "pooled", "verdict"]
    lines = md_table(rows, columns, align=len(columns)).splitlines()
    tau = scaling_verdicts.m2_seed_tau(frames, grid)
    taus = tau.filter(like="tau seed")
    spread = taus.max(axis=1) - taus.min(axis=1)
    widest = tau.loc[spread.idxmax()]
    steps = tau.assign(mean=taus.mean(axis=1)).sort_values("finetune_tokens").groupby("recipe")["mean"].diff().dropna()
    values = " / ".join(f"{widest[c]:.2f}" for c in taus.columns)
    verdicts = {v.name: v for v in scaling_verdicts.m2_over_seeds(frames, grid)}
    alone = {v.name: v.status for v in scaling_verdicts.m2_verdicts(frames[0], grid)}
    same = [n for n, v in verdicts.items() if v.status == alone[n]]
    lines.append("")
    if len(same) == len(verdicts):
        stand = "No seed reverses a pooled verdict; every verdict is the one seed 0 gave alone."
    else:
        stand = f"The verdicts seed 0 gives alone stand for {', '.join(same) or 'none'} of the findings."
    lines.append(
        stand + f" The seed spread of τ at a budget is at most {spread.max():.2f} ({widest.recipe} at"
        f" {widest.finetune_tokens:,.0f} tokens: {values}); between neighbouring budgets the seeds' mean τ rises by"
        f" {steps.min():.2f} to {steps.max():.2f}."
    )
    return "\n".join(lines)


def ml_pair_seeds_block(root: pathlib.Path | None = None) -> str:
    """M1 (in the paper's regime, as the scoreboard decides it), M1-τ and M3 per training seed and pooled, and which
    pooled verdicts differ from seed 0's alone."""
    mains, oods = findings.pair_seed_frames("tiny", root or results.COMMITTED)
    # (each seed's findings of a frame, the frames per seed, the pooling rules): M1 at T = 0 and 1, then M3
    specs: list[tuple[Callable[..., list], dict, dict | None]] = [
        (lambda f, t=t: findings.m1_paper_regime(f, t), mains, drafter_verdicts.m1_rules(t)) for t in (0.0, 1.0)
    ]
    specs.append((lambda f: [scaling_verdicts.m3_verdict(f)], oods, None))
    decided = [verdict.seed_verdicts(make, frames) for make, frames, _ in specs]  # each seed's findings, once
    tables = [verdict.seed_table(*spec, per_seed) for spec, per_seed in zip(specs, decided)]
    rows = [r for table in tables for r in table.to_dict("records")]
    alone = {name: v.status for per_seed in decided for name, v in per_seed[min(per_seed)].items()}  # seed 0's
    moved = [
        f"{r['finding']} ({alone[r['finding']]} → {r['verdict']})" for r in rows if r["verdict"] != alone[r["finding"]]
    ]
    rows = board_verdicts(rows, root)
    columns = list(rows[0])
    lines = md_table(rows, columns, align=len(columns)).splitlines()
    lines.append("")
    if moved:
        reading = "Pooled verdicts that differ from seed 0's alone: " + "; ".join(moved) + "."
    else:
        reading = "Every pooled verdict is the one seed 0 gives alone."
    lines.append(
        f"Training seeds {', '.join(map(str, sorted(mains)))} (Table 1) and {', '.join(map(str, sorted(oods)))}"
        " (heatmap). " + reading
    )
    return "\n".join(lines)


def _pair_seed_minutes(pairs) -> str:
    """The sentence on the other four pairs' retrained drafters (minutes per seed: ``pairs``, models × seeds)."""
    if not len(pairs):
        return ""
    f, pf = pairs[pairs.index.str.contains("-f-")], pairs[pairs.index.str.contains("-pf-")]
    together = " / ".join(f"{v:.1f}" for v in pairs.sum())
    return (
        f" The other four pairs' F and P-F drafters (Table 1: M1, M3): F {f.min().min():.1f} to {f.max().max():.1f}"
        f" each, P-F {pf.min().min():.1f} to {pf.max().max():.1f} each, {together} together per seed."
    )


def m2_seed_training_block() -> str:
    """Minutes each training seed's drafters took (``ml_training_seeds.csv``) beside seed 0's (``ml_training.csv``).
    Every P-F row's ``seconds`` includes pretraining P (P-F is P, then F): it is subtracted to give the finetune."""
    folder = zoo.DATA / "multilingual"
    seed0 = pd.read_csv(folder / "ml_training.csv").set_index("model")
    seeds = pd.read_csv(folder / "ml_training_seeds.csv")
    seeds = seeds[seeds.same_as.isna()]
    p_seconds = seed0.seconds["ml-draft-generic"]
    seeds["finetune"] = seeds.seconds - p_seconds * (seeds.recipe == "P-F")

    main = ["ml-draft-f-de", "ml-draft-pf-de"]
    per = seeds.pivot_table(index="model", columns="train_seed", values="finetune", aggfunc="sum") / 60
    grid = per.reindex(index=[m for m in GRID if m not in main]).sum()
    pairs = per.reindex(index=[m for m in PAIR_DRAFTERS if m in per.index])
    cell = " / ".join
    f0, pf0 = seed0.loc["ml-draft-f-de"], seed0.loc["ml-draft-pf-de"]
    where = "on a GPU" if str(f0.device).startswith("NVIDIA") else "on this CPU"
    return (
        f"Finetune minutes per seed ({cell(str(k) for k in per.columns)}; `ml_training_seeds.csv`, P-F rows without"
        f" P's {p_seconds:.1f} s, which every P-F row includes, as seed 0's do): `ml-draft-f-de`"
        f" {cell(f'{v:.1f}' for v in per.loc['ml-draft-f-de'])} (seed 0's: {f0.seconds / 60:.1f} {where}),"
        f" `ml-draft-pf-de` {cell(f'{v:.1f}' for v in per.loc['ml-draft-pf-de'])} (seed 0's:"
        f" {(pf0.seconds - p_seconds) / 60:.1f}), the {len(GRID) - len(main)} small"
        f" grid drafters together {cell(f'{v:.1f}' for v in grid)}." + _pair_seed_minutes(pairs)
    )


M3_CELLS = [
    ("in drafter's -> out en", "X → En"),
    ("in other -> out en", "other → En"),
    ("in en -> out drafter's", "En → X"),
    ("in other -> out drafter's", "other → X"),
    ("in drafter's -> out other", "X → other"),
    ("in en -> out other", "En → other"),
    ("in other -> out other", "other → other"),
]
LANGS = ("de", "fr", "ru", "ja", "zh")


def m3_block(root: pathlib.Path | None = None) -> str:
    """Each P-F drafter's τ by (input, output) language class and the held-out phrasebook loss, with the sentences
    the M3 condition reads from them."""
    m = results.proxy_conditions("M3", root).value
    loss = m["heldout loss translation pages"]
    tau = m["tau"]
    rows = [
        {"model": f"`{d}`", "loss": f"{loss[d]:.2f}", **{label: f"{tau[f'{d}: {c}']:.2f}" for c, label in M3_CELLS}}
        for d in [f"ml-draft-pf-{x}" for x in LANGS]
    ]
    rows += [{"model": f"`{d}`", "loss": f"{loss[d]:.2f}"} for d in ("ml-draft-generic", "ml-target")]
    columns = ["model", "loss", *(label for _, label in M3_CELLS)]
    header = ["model", "held-out loss, phrasebook pages", *(f"τ {label}" for _, label in M3_CELLS)]
    table = md_table(rows, columns, header, align=1)
    drafters = [f"ml-draft-pf-{x}" for x in LANGS]
    cell = {c: [tau[f"{d}: {c}"] for d in drafters] for c, _ in M3_CELLS}
    non_en = [v for c, values in cell.items() if not c.endswith("out en") for v in values]
    n = results.proxy_conditions("M3", root).n["tau"]
    chrf = m["target chrF"]
    mean_into_own = sum(cell["in other -> out drafter's"]) / len(drafters)
    return table + (
        f"\n\nX is the drafter's own language; τ is the mean over the committed `ml_ood` requests at T = 0 of each"
        f" cell. On the held-out phrasebook pages the generic drafter's loss is {loss['ml-draft-generic']:.2f} and"
        f" the P-F drafters' {span(loss[drafters])}, against {m[('uniform loss ln|V|', '-')]:.2f} for a uniform guess"
        f" and {loss['ml-target']:.2f} for the target. With a non-English output the P-F drafters give τ"
        f" {span(non_en)} (pooled {tau['all drafters: out non-en']:.2f} over {n['all drafters: out non-en']:,}"
        f" requests, against {tau['all drafters: out en']:.2f} over {n['all drafters: out en']:,} with English"
        f" output). From another input language into their own, the check's column, the five drafters' mean is"
        f" {mean_into_own:.2f} (the check asks for more than 1.09). With English output, its own input language gives"
        f" τ {span(cell[M3_CELLS[0][0]])} and another input {span(cell[M3_CELLS[1][0]])}. The target writes both"
        f" ways (Django held out: chrF {chrf['django en-xx']:.1f} En→X, {chrf['django xx-en']:.1f} X→En)."
    )


def m_pf_block(root: pathlib.Path | None = None) -> str:
    """Per finetune set: distilled examples and answer tokens, steps, passes and held-out prose loss of the P-F and
    F drafters; the sentences the M-PF decision reads from them."""
    training = pd.read_csv(zoo.DATA / "multilingual" / "ml_training.csv").set_index("model")
    m = results.proxy_conditions("M-PF", root)
    passes, prose = m.value["finetune passes"], m.value["heldout loss prose"]
    sets = [(f"de, 1/{k}", f"-de-b{b}") for k, b in ((64, 44), (16, 168), (4, 612))]
    sets += [(f"{x}, all", f"-{x}") for x in LANGS]
    rows = []
    for label, suffix in sets:
        pf, f = f"ml-draft-pf{suffix}", f"ml-draft-f{suffix}"
        rows.append(
            {
                "set": label,
                "examples": f"{training.finetune_examples[pf]:,.0f}",
                "tokens": f"{training.finetune_tokens[pf]:,.0f}",
                "steps": f"{training.finetune_steps[pf]:.0f}",
                "passes": f"{passes[pf]:.1f} / {passes[f]:.1f}",
                "loss": f"{prose[pf]:.2f} / {prose[f]:.2f}",
            }
        )
    columns = list(rows[0])
    header = ["finetune set (De: Fig. 4's subsets)", "distilled examples", "answer tokens", "steps"]
    header += ["passes P-F / F (paper: 3 / 5)", "held-out prose loss P-F / F"]
    table = md_table(rows, columns, header, align=1)
    main_pf = [f"ml-draft-pf-{x}" for x in LANGS]
    main = main_pf + [f"ml-draft-f-{x}" for x in LANGS]
    grid = [f"ml-draft-pf-de-b{b}" for b in (44, 168, 612)] + ["ml-draft-pf-de"]
    rising = all(a < b for a, b in zip(prose[grid], prose[grid][1:], strict=False))
    steps = [training.finetune_steps[d] for d in grid]
    trail = ", ".join(f"{prose[d]:.2f} after {s:.0f} steps" for d, s in zip(grid, steps, strict=True))
    tokens = training.finetune_tokens[main_pf]
    large = "ml-draft-large-pf-de"
    uniform = results.proxy_conditions("M3", root).value[("uniform loss ln|V|", "-")]
    seen = training.finetune_tokens_seen["ml-draft-pf-de"]
    return table + (
        f"\n\nOn the {span(training.finetune_examples[main_pf], ',.0f')} distilled examples of a pair (about"
        f" {tokens.mean() / 1000:.0f} k answer tokens) the P-F finetunes make {span(passes[main_pf], '.1f')} passes and"
        f" the F finetunes {span(passes[main[5:]], '.1f')} (the paper: 3 and 5 epochs); Fig. 4's subsets make"
        f" {span([passes[d] for d in grid[:3]], '.1f')} (P-F). Held-out prose loss "
        + ("rises" if rising else "does not rise monotonically")
        + f" with the number of finetune steps. For `ml-draft-pf-de-b<N>`: {trail} (`ml-draft-pf-de`), against P's"
        f" {prose['ml-draft-generic']:.2f} and a uniform guess of {uniform:.2f}. The other P-F drafters reach"
        f" {span(prose[main_pf[1:]])}, `{large}` {prose[large]:.2f} after {passes[large]:.1f} passes, and the F"
        f" drafters {span(prose[main[5:]], '.1f')}. The De→En P-F drafter sees {seen / 1000:.0f} k answer tokens"
        f" ({seen / training.parameters['ml-draft-pf-de']:.2f} per parameter; the paper's about 60)."
    )


# the blocks of the study's page (``Study.doc_blocks``): block name -> its text from the committed results
BLOCKS = {
    "m2-seeds": m2_seeds_block,
    "ml-pair-seeds": ml_pair_seeds_block,
    "m2-seed-training": m2_seed_training_block,
    "m3-measured": m3_block,
    "m-pf-measured": m_pf_block,
}
