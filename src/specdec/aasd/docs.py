"""AASD's generated doc blocks (``scripts/update_docs_tables.py`` splices them into ``docs/papers/aasd.md`` and the
data card): the findings over training seeds (``seeds_block``), A2 on both ablation targets (``a2_block``), the A5
proxy condition (``a5_block``) and the data card's rows of AASD's measured proxy conditions (``condition_rows``).
Each reads the committed results (``root``: a results folder, default ``results.COMMITTED``) and the shipped models'
files, as the scoreboard does, so a page never reads a finding differently from the board."""

from __future__ import annotations

import json
import pathlib

import pandas as pd

from specdec import results, zoo
from specdec.aasd import findings, seeds, tables, zoo_specs
from specdec.aasd.experiments import KEY
from specdec.markdown import condition_cell, md_table, verdict_seeds_block

PAGE = "`docs/papers/aasd.md`"


def seeds_block(root: pathlib.Path | None = None) -> str:
    """A1-A5 per training seed of the modules and baselines and pooled, as ``findings.findings_from_results`` reads
    them, and what each baseline seed took to train and reached (``seeds.BASELINE_SUMMARY``)."""
    lines = verdict_seeds_block(findings.findings_from_results("tiny", root=root or results.COMMITTED))
    trained = pd.read_csv(seeds.BASELINE_SUMMARY, keep_default_na=False)
    rows = [
        {
            "baseline": r.model,
            "target": f"`{r.target}`" if r.target else "",
            "training seed": r.train_seed,
            "model seed": r.seed,
            "minutes": f"{r.seconds / 60:.1f}",
            "held-out loss real / white": f"{r.heldout_loss:.3f} / {r.heldout_loss_blank_images:.3f}",
        }
        for r in trained.itertuples()
    ]
    table = md_table(rows, list(rows[0]), align=2)
    return (
        lines
        + "\n\nThe baselines of each seed (seed 0: the shipped ones, timed under the load of their first training;"
        " seeds 1 and 2 on this repository's CPU, one thread each, side by side; the held-out answer loss with the"
        " rows' images and with white ones):\n\n" + table
    )


def a5_block(root: pathlib.Path | None = None) -> str:
    """The A5 measurement table and its reading (how much a white image costs each LLaVA baseline and the control)."""
    m = findings.a5_table(root)
    control = m.iloc[-1]
    cells = m.iloc[:-1]
    rows = [
        {
            "draft": r.draft if i < len(cells) else f"`{r.draft}` (control, same size)",
            "target": f"`{r.target}`",
            "τ real": f"{r['tau real']:.3f}",
            "τ white": f"{r['tau white']:.3f}",
            "share of requests whose τ moves": f"{r['share moved']:.0%}".replace("%", " %"),
            "held-out loss real": f"{r['loss real']:.3f}",
            "held-out loss white": f"{r['loss white']:.3f}",
        }
        for i, (_, r) in enumerate(m.iterrows())
    ]
    table = md_table(rows, list(rows[0]), align=2).splitlines()
    cost = cells["tau real"] - cells["tau white"]
    control_cost = control["tau real"] - control["tau white"]
    reads = bool(((cost > 0) & (cells["loss real"] < cells["loss white"])).all())
    more = bool((cells["share moved"] > control["share moved"]).all() and (cost > control_cost).all())
    if reads:
        reading = "Every LLaVA baseline reads its image" + (", more than the control does" if more else "")
    else:
        reading = "Not every LLaVA baseline reads its image"
    share = cells["share moved"]
    testable = findings.a5_validity(root)[0] != "no"
    return "\n".join(table) + (
        f"\n\n{reading}: the white image costs {cost.min():.2f} to {cost.max():.2f} τ (control"
        f" {control_cost:.2f}) and moves τ on {share.min():.0%} to {share.max():.0%} of"
        f" requests (control {control['share moved']:.0%}). A5 is "
        + ("testable on this proxy." if testable else "not testable on this proxy.")
    ).replace("%", " %")


def a2_block(root: pathlib.Path | None = None) -> str:
    """A2 on both ablation targets (seed 0's modules): visual positions and k of the main module, the target's held-out
    answer loss with real and white images, and τ of the module with and without its projector and image KV."""
    runs = tables.runs(pd.read_csv(pathlib.Path(root or results.COMMITTED) / "tiny" / "aasd_runs.csv"), "ablations")
    rows = []
    for target in ("tabed-target", zoo_specs.P8_TARGET):
        module = json.loads((zoo.model_dir(zoo_specs.module_name(target)) / "config.json").read_text())["module"]
        heldout = json.loads((zoo.model_dir(target) / "training_log.json").read_text())["summary"]["heldout"]
        loss = heldout["in_distribution"]
        for gamma, cell in runs[(runs.target == target) & (runs.draft != "AR")].groupby("gamma"):
            tau = cell.groupby("draft").block_efficiency.mean()
            rows.append(
                {
                    "target": f"`{target}`",
                    "positions → k": f"{module['image_tokens']} → {module['projector_k']}",
                    "held-out loss real / white": f"{loss['loss']:.3f} / {loss['loss_blank_images']:.3f}",
                    "γ": int(gamma),
                    "τ AASD": f"{tau['AASD']:.3f}",
                    "τ w/o projector": f"{tau['AASD w/o projector']:.3f}",
                    "τ w/o image KV": f"{tau['AASD w/o image KV']:.3f}",
                    "image KV's τ": f"{tau['AASD'] - tau['AASD w/o image KV']:+.3f}",
                }
            )
    table = md_table(rows, list(rows[0]), align=3).splitlines()
    return "\n".join(table) + (
        "\n\nMean τ over notebook 41's 189 requests, training seed 0 (notebook 41 has every seed); the held-out loss"
        " is the target's answer loss on the in-distribution held-out rows (`training_log.json`)."
    )


def condition_rows(root: pathlib.Path | None = None) -> list[tuple[str, str, str]]:
    """The data card's rows (condition, cell, page) of AASD's conditions read from the committed runs (issue 44):
    A1 / A5's struggling small multimodal drafts and A4's module that reads the image KV; each cell the check's
    result and its measurement (A4's without the hidden positions every A4 validity names)."""
    runs = results.ResultStore("tiny", "aasd_runs", KEY, root=pathlib.Path(root or results.COMMITTED)).frame()
    struggle = findings.struggle_validity(tables.runs(runs, "table1"))
    ablated = tables.runs(runs, "ablations")
    a4 = findings.a4_validity(ablated[ablated.target == findings.ablation_target("tiny")])
    a4 = a4[0], a4[1].replace(f"{findings.A4_HIDDEN}; ", "")  # the row's measurement only
    return [
        (
            "A1 / A5: small multimodal drafts that struggle",
            condition_cell(struggle, findings.TINY_WHY, "struggle_validity"),
            PAGE,
        ),
        ("A4: a module that reads the image KV", condition_cell(a4, findings.TINY_WHY, "a4_validity"), PAGE),
    ]


# the blocks of the study's page (``Study.doc_blocks``): block name -> its text from the committed results
BLOCKS = {"aasd-seeds": seeds_block, "a2-measured": a2_block, "a5-measured": a5_block}
