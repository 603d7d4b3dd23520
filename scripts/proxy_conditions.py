"""Measure, on the shipped tiny proxies, each condition issue 26 says a paper's claim depends on, and write the
rows to ``results/tiny/proxy_conditions.csv`` (long format, sorted, 4 decimals: the same file on every run).

Conditions (``docs/papers/{multilingual,aasd,tabed}.md``, section *Proxy conditions*):

- ``M3``: can the multilingual drafters emit non-English? τ of every P-F drafter by input / output language class
  (committed ``ml_ood`` rows), the drafters' and the target's held-out loss on the bilingual phrasebook pages and
  the target's En→X chrF (``data/multilingual/ml_training.csv``).
- ``M-PF``: held-out prose loss of the P-F / F drafters against the passes their finetune made over its data.
- ``A2``: visual positions per image and the KV projector's compression, beside the paper's 576 → 64; the τ cost
  of dropping image KV (committed ``aasd_runs`` rows).
- ``A5``: do the small LLaVA baselines read their image? τ with the request's image against an all-white image
  of the same size given to the draft only (the target always sees the real one), γ = 5, ≤ 48 new tokens;
  ``tabed-draft`` (TABED's M, known to read images) is the control. Decoded live (the ``real`` cells equal the
  committed ``aasd_runs`` rows of the same requests; the script checks it). Beside it each draft's held-out
  answer loss on the TABED data file's held-out rows with real and with white images. ``aasd.findings.a5_validity``
  reads these rows.
- ``T1b``: do the TABED second turns rest on the target's own first answer? The target's greedy answer (≤ 128
  tokens) to the first turn of every second-turn request, decoded live (not read from the answer cache), against
  the first answer the rebuilt request carries (``tabed.data.own_first_answers``: share 1.0 by construction) and
  against the scripted answer the shipped suite carried before (the condition the rebuild fixed).
- ``T2``: answer length and how often the window h can cover every past verified position (committed
  ``tabed_runs`` rows).
- ``T5``: the same on Table 3's long-answer pair, per training seed (committed ``tabed_windows`` rows).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/proxy_conditions.py            # ~2-4 min on one thread
    OMP_NUM_THREADS=1 .venv/bin/python scripts/proxy_conditions.py --no-live  # committed rows only, seconds
    OMP_NUM_THREADS=1 .venv/bin/python scripts/proxy_conditions.py --only T1b  # these conditions; others kept
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib

import numpy as np
import pandas as pd
import torch
from PIL import Image

from specdec import results
from specdec.tabed import windows as tw

ROOT = pathlib.Path(__file__).resolve().parents[1]
# the rows measured and the file written: the committed tables, or the base layer SPECDEC_BASE_DIR names (a fresh
# recompute, ``scripts/reproduce_fresh.py``, measures its own rows before its scoreboard reads the conditions)
RESULTS = results.COMMITTED / "tiny"
OUT = RESULTS / "proxy_conditions.csv"
COLUMNS = ["condition", "quantity", "subset", "value", "n", "paper"]
VOCAB = 4096  # the foundation tokenizer: uniform loss ln 4096 = 8.318


def row(condition, quantity, subset, value, n=None, paper=None) -> dict:
    return dict(condition=condition, quantity=quantity, subset=subset, value=value, n=n, paper=paper)


# ------------------------------------------------------------------------------------------------ multilingual
def language_class(lang: str, drafter_lang: str) -> str:
    return "drafter's" if lang == drafter_lang else ("en" if lang == "en" else "other")


def multilingual_ood() -> list[dict]:
    """τ (mean over requests) of each P-F drafter by (input class, output class): the drafter's own language X,
    English, or another language."""
    ood = pd.read_csv(RESULTS / "ml_ood.csv")
    ood = ood[(ood.temperature == 0) & (ood.method == ood.drafter)]
    ood["lang"] = ood.drafter.str.rsplit("-", n=1).str[-1]
    src, tgt = ood.pair.str.split("-").str[0], ood.pair.str.split("-").str[1]
    ood["cell"] = [
        f"in {language_class(a, x)} -> out {language_class(b, x)}" for a, b, x in zip(src, tgt, ood.lang, strict=True)
    ]
    out = []
    for (drafter, cell), g in ood.groupby(["drafter", "cell"]):
        out.append(row("M3", "tau", f"{drafter}: {cell}", g.block_efficiency.mean(), len(g)))
    out_en = tgt == "en"
    for name, mask in (("all drafters: out en", out_en), ("all drafters: out non-en", ~out_en)):
        g = ood[mask]
        out.append(row("M3", "tau", name, g.block_efficiency.mean(), len(g)))
    return out


def multilingual_losses() -> list[dict]:
    """Held-out losses of ``ml_training.csv``: phrasebook pages (English + X lines: can a model emit X?), prose
    (what P taught), and the passes the finetune made over its distinct tokens."""
    t = pd.read_csv(ROOT / "data" / "multilingual" / "ml_training.csv")
    t = t[t.same_as.isna()]
    out = [row("M3", "uniform loss ln|V|", "-", math.log(VOCAB))]
    target = t[t.model == "ml-target"].iloc[0]
    for direction in ("xx-en", "en-xx"):
        out.append(row("M3", "target chrF", f"django {direction}", target[f"django_{direction}_chrf"]))
    for _, m in t.iterrows():
        out.append(row("M3", "heldout loss translation pages", m.model, m.loss_translation))
        out.append(row("M-PF", "heldout loss prose", m.model, m.loss_prose))
        if m.role == "drafter" and m.recipe in ("F", "P-F"):
            passes = m.finetune_tokens_seen / m.finetune_tokens
            paper = 3 if m.recipe == "P-F" else 5  # App. F.3: P-F 3 epochs, F 5 epochs
            out.append(row("M-PF", "finetune passes", m.model, passes, int(m.finetune_steps), paper))
            if m.model in ("ml-draft-pf-de", "ml-draft-f-de"):  # one lr for every finetune
                out.append(row("M-PF", "finetune lr", m.model, m.ft_lr, None, 2e-5))
    return out


# ----------------------------------------------------------------------------------------------------- AASD
def aasd_projector() -> list[dict]:
    """A2 on notebook 41's target (``aasd.experiments.ablation_target``): its visual positions, its module's k, the
    target's held-out answer loss with real and white images (``training_log.json``), and τ of the ablations."""
    from specdec.aasd.experiments import ablation_target
    from specdec.aasd.zoo_specs import module_name

    target = ablation_target("tiny")
    module = json.loads((ROOT / "data" / "models" / module_name(target) / "config.json").read_text())["module"]
    heldout = json.loads((ROOT / "data" / "models" / target / "training_log.json").read_text())["summary"]["heldout"]
    n, k = module["image_tokens"], module["projector_k"]
    out = [
        row("A2", "visual positions per image", target, n, None, 576),
        row("A2", "projected positions per image (k)", module_name(target), k, None, 64),
        row("A2", "compression ratio", module_name(target), n / k, None, 576 / 64),
        row("A2", "target heldout loss (real image)", target, heldout["in_distribution"]["loss"]),
        row("A2", "target heldout loss (blank image)", target, heldout["in_distribution"]["loss_blank_images"]),
    ]
    runs = pd.read_csv(RESULTS / "aasd_runs.csv")
    for gamma in (3, 5):
        abl = runs[(runs.table == "ablations") & (runs.gamma == gamma) & (runs.target == target)]
        tau = abl.groupby("draft").block_efficiency.mean()
        for draft in ("AASD", "AASD w/o image KV", "AASD w/o projector"):
            out.append(row("A2", f"tau (gamma {gamma})", draft, tau[draft], int((abl.draft == draft).sum())))
        cost = tau["AASD"] - tau["AASD w/o image KV"]
        out.append(row("A2", f"tau cost of dropping image KV (gamma {gamma})", "AASD", cost))
    return out


def blank_like(images) -> list:
    return [Image.new("RGB", im.size, "white") for im in images]


def heldout_image_losses(model, data_file: pathlib.Path = ROOT / ".cache" / "tabed_data.pt") -> dict[str, float]:
    """A LLaVA draft's held-out answer loss (``aasd.draft_training.heldout_answer_loss``) on the held-out rows of the
    TABED data file (built if missing) with their images and with every image all white: ``{"real", "blank"}``."""
    from specdec.aasd import draft_training
    from specdec.aasd.rows import file_rows
    from specdec.vlm.data import build_data

    if not data_file.exists():
        data_file.parent.mkdir(parents=True, exist_ok=True)
        torch.save(build_data(), data_file)
    data = torch.load(data_file, weights_only=True)
    out = {}
    for cond, blank in (("real", False), ("blank", True)):
        rows = file_rows(data, "heldout", blank=blank)
        out[cond] = draft_training.heldout_answer_loss(
            model, draft_training.draft_batches(model, rows, {"kind": "llava"}, None), len(rows)
        )
    return out


def aasd_image_use(n_per_task: int) -> list[dict]:
    """τ of each LLaVA draft with the request's image and with a white one (the draft's pixels only), and its
    held-out answer loss with real and with white images; FT-LLaVA and DT-LLaVA of every training seed on this
    machine as well (``aasd.seeds.baselines_here``: A5 is read over them), labelled ``<draft> seed <k>``."""
    from specdec.aasd import experiments as ab
    from specdec.aasd import seeds
    from specdec.aasd.zoo_specs import TARGETS
    from specdec.cache import CachedLM
    from specdec.drafters import ModelDrafter
    from specdec.engine import generate
    from specdec.vlm.prompts import encode
    from specdec.zoo import models

    requests = ab.load_requests(n_per_task)
    out, live = [], {}
    cells = [
        ("tabed-target", "FT-LLaVA", 0),
        ("tabed-target", "DT-LLaVA", 0),
        ("aasd-target-s", "FT-LLaVA", 0),
        ("aasd-target-s", "DT-LLaVA", 0),
        *[
            (t, d, k)
            for k in seeds.trained_seeds("tiny")
            for t in TARGETS
            for d in ("FT-LLaVA", "DT-LLaVA")
            if d in seeds.baselines_here(t, k)
        ],
        ("tabed-target", "tabed-draft", 0),
    ]
    for target_name, draft_name, k in cells:
        target, processor = ab.load_target(target_name)
        eos = processor.tokenizer.eos_token_id
        if draft_name == "tabed-draft":
            drafter = ModelDrafter(models.load(draft_name, kind="llava", with_tokenizer=False)[0])
        else:
            drafter, _ = ab.make_drafter(draft_name, target_name, target, CachedLM(target), processor, train_seed=k)
        taus: dict[str, list[float]] = {"real": [], "blank": []}
        for r in requests:
            ids, inputs = encode(processor, r["prompt"], r["images"])
            _, blank = encode(processor, r["prompt"], blank_like(r["images"]))
            for cond, draft_inputs in (("real", inputs), ("blank", blank)):
                res = generate(CachedLM(target), ids, drafter, gamma=5, max_new_tokens=48, eos_token_id=eos,
                               target_inputs=inputs, draft_inputs=draft_inputs)  # fmt: skip
                taus[cond].append(res.block_efficiency)
        label = f"{draft_name}{f' seed {k}' if k else ''} on {target_name}"
        live[label] = (target_name, draft_name, k, {r["id"]: tau for r, tau in zip(requests, taus["real"])})
        for cond, values in taus.items():
            out.append(row("A5", f"tau ({cond} image)", label, float(np.mean(values)), len(values)))
        for cond, loss in heldout_image_losses(drafter.model).items():
            out.append(row("A5", f"heldout answer loss ({cond} image)", label, loss))
        diff = np.array(taus["real"]) - np.array(taus["blank"])
        out.append(row("A5", "tau real - blank", label, float(diff.mean()), len(diff)))
        out.append(row("A5", "share of requests where the image changes tau", label, float((diff != 0).mean())))
    return out + committed_equal(live)


def committed_equal(live: dict) -> list[dict]:
    """Per cell, the share of requests whose live real-image τ equals the committed ``aasd_runs`` row (Table 1,
    γ = 5; stored with 6 digits; a seed's: its ``aasd_runs_seeds`` row), read after the measurement (the table may
    be filling meanwhile)."""
    tables = {0: pd.read_csv(RESULTS / "aasd_runs.csv")}
    seeded = pd.read_csv(RESULTS / "aasd_runs_seeds.csv")
    tables |= {int(k): rows for k, rows in seeded.groupby("train_seed")}
    out = []
    for label, (target_name, draft_name, k, taus) in live.items():
        committed = tables.get(k, seeded.iloc[:0])
        committed = committed[(committed.table == "table1") & (committed.gamma == 5)]
        stored = committed[(committed.target == target_name) & (committed.draft == draft_name)]
        stored = stored[stored.row.isin(list(taus))].set_index("row").block_efficiency
        same = [abs(float(stored[i]) - taus[i]) < 1e-4 for i in stored.index]
        if same:
            out.append(row("A5", "real-image tau equals committed row", label, float(np.mean(same)), len(same)))
    return out


# ---------------------------------------------------------------------------------------------------- TABED
def tabed_first_answers(n: int) -> list[dict]:
    """On the first ``n`` second-turn requests of every scenario: how often the first answer the request carries
    equals the target's greedy answer to its first turn, decoded here (the rebuilt suite: 1.0), and how often the
    scripted first answer the shipped suite carried equals it (with the share of it before the first
    difference)."""
    from specdec.engine import autoregressive
    from specdec.tabed import data
    from specdec.tabed import experiments as tb
    from specdec.vlm import scenes
    from specdec.vlm.prompts import encode

    target, _, processor = tb.load_vlm_pair("tiny")
    tok = processor.tokenizer
    out = []
    for scenario in [s for s, t in scenes.SCENARIOS if t == 2]:
        carried, exact, prefix = [], [], []
        for r in data.load_suite("tiny", n, scenarios=[(scenario, 2)], target=target, processor=processor):
            first_part = r["prompt"].split(scenes.TURN_END)[0]
            in_request = first_part[first_part.index(scenes.ASSISTANT) + len(scenes.ASSISTANT) :].strip()
            ids, inputs = encode(processor, scenes.chat_prompt([(r["first_user"], None)]), r["images"])
            res = autoregressive(target, ids, max_new_tokens=128, eos_token_id=tok.eos_token_id, target_inputs=inputs)
            own = tok.decode(res.output_ids, skip_special_tokens=True).replace(scenes.IMAGE_PLACEHOLDER, "").strip()
            carried.append(own == in_request)
            exact.append(own == r["first_answer"])
            want = tok(" " + r["first_answer"], add_special_tokens=False).input_ids
            got = res.output_ids
            agree = next(
                (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got))
            )
            prefix.append(agree / max(1, len(want)))
        out.append(row("T1b", "second turn carries the target's greedy first answer", scenario, np.mean(carried), n))
        out.append(row("T1b", "target reproduces the scripted first answer", scenario, float(np.mean(exact)), n))
        out.append(
            row("T1b", "share of the scripted answer before the first difference", scenario, float(np.mean(prefix)), n)
        )
    return out


def tabed_window() -> list[dict]:
    runs = pd.read_csv(RESULTS / "tabed_runs.csv")
    ar = runs[runs.method == "AR"]
    out = [row("T2", "mean answer tokens", "all AR requests", ar.new_tokens.mean(), len(ar), 48)]
    out.append(row("T2", "median answer tokens", "all AR requests", ar.new_tokens.median(), len(ar)))
    out.append(row("T2", "share of answers of 48+ tokens", "all AR requests", (ar.new_tokens >= 48).mean(), len(ar)))
    for (group, turn), g in ar.groupby(["group", "turn"]):
        out.append(row("T2", "mean answer tokens", f"{group} turn {turn}", g.new_tokens.mean(), len(g), 48))
    mt = runs[(runs.method == "MT*") & (runs.gamma == 5)]
    # the window study's requests in Table 3's cells (findings.T5_GROUPS: benchmark first turns, the story sets)
    table3 = (mt.group == "ood") | ((mt.group == "benchmark") & (mt.turn == 1))
    mt = mt[mt.row.isin(set(mt[mt.window == "16"].row)) & table3]
    full = mt[mt.window == "ALL"].drop_duplicates("row").set_index("row")
    out.append(
        row("T2", "mean blocks per request (MT*, gamma 5)", "Table 3 cells", full.target_calls.mean(), len(full))
    )
    out.append(row("T2", "mean tau (MT*, gamma 5)", "Table 3 cells", full.block_efficiency.mean(), len(full)))
    for h in (1, 4, 16):
        covered = (full.new_tokens <= h + 5 + 1).mean()  # windows.COVER_QUANTITY: an upper bound, γ = 5
        out.append(row("T2", tw.COVER_QUANTITY, f"h={h}", covered, len(full)))
        win = mt[mt.window == str(h)].drop_duplicates("row").set_index("row")
        equal = (win.accepted == full.accepted.reindex(win.index)).mean()
        out.append(row("T2", "share of requests where MT*(h) accepts as MT*(ALL)", f"h={h}", equal, len(win)))
    return out


def tabed_window_long() -> list[dict]:
    """The T2 quantities on Table 3's long-answer pair (``tabed_windows``), per training seed: answer length per
    group of Table 3, blocks and τ of MT*(ALL), and per h how often it covers every past block or accepts as ALL."""
    runs = pd.read_csv(RESULTS / "tabed_windows.csv")
    out = []
    for seed, rows in runs.groupby("train_seed", sort=True):
        tag = f"seed {seed}"
        ar = rows[rows.method == "AR"]
        for group, g in ar.groupby("group"):
            name = "benchmark turn 1" if group == "benchmark" else group
            out.append(row("T5", "mean answer tokens", f"{tag}: {name}", g.new_tokens.mean(), len(g), 48))
        mt = rows[(rows.method == "MT*") & (rows.gamma == 5)]
        full = mt[mt.window == "ALL"].drop_duplicates("row").set_index("row")
        out.append(row("T5", "mean blocks per request (MT*, gamma 5)", tag, full.target_calls.mean(), len(full)))
        out.append(row("T5", "mean tau (MT*, gamma 5)", tag, full.block_efficiency.mean(), len(full)))
        for h in (1, 4, 16):
            covered = (full.new_tokens <= h + 5 + 1).mean()  # as in tabed_window
            out.append(row("T5", tw.COVER_QUANTITY, f"{tag}: h={h}", covered, len(full)))
            win = mt[mt.window == str(h)].drop_duplicates("row").set_index("row")
            equal = (win.accepted == full.accepted.reindex(win.index)).mean()
            out.append(row("T5", "share of requests where MT*(h) accepts as MT*(ALL)", f"{tag}: h={h}", equal,
                           len(win)))  # fmt: skip
    return out


# condition -> (its rows from the parsed arguments, whether it decodes live)
CONDITIONS = {
    "M3": (lambda a: multilingual_ood() + multilingual_losses(), False),
    "A2": (lambda a: aasd_projector(), False),
    "T2": (lambda a: tabed_window(), False),
    "T5": (lambda a: tabed_window_long(), False),
    "A5": (lambda a: aasd_image_use(a.aasd_per_task), True),
    "T1b": (lambda a: tabed_first_answers(a.tabed_per_scenario), True),
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-live", action="store_true", help="only the committed rows (no decoding)")
    parser.add_argument("--aasd-per-task", type=int, default=12, help="A5 requests per task (3 tasks)")
    parser.add_argument("--tabed-per-scenario", type=int, default=20, help="T1b requests per second-turn scenario")
    parser.add_argument("--only", nargs="+", metavar="CONDITION", help="measure only these; keep the file's others")
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    wanted = set(args.only or CONDITIONS)
    rows = []
    for condition, (measure, live) in CONDITIONS.items():
        if condition in wanted and (not live or not args.no_live):
            rows += measure(args)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if args.only:  # the other conditions' rows as the file has them
        kept = pd.read_csv(args.out)
        frame = pd.concat([kept[~kept.condition.isin(wanted | set(frame.condition))], frame], ignore_index=True)
    frame["value"] = frame.value.astype(float).round(4)
    frame["n"] = frame.n.astype("Int64")
    frame = frame.sort_values(["condition", "quantity", "subset"], kind="stable").reset_index(drop=True)
    frame.to_csv(args.out, index=False, lineterminator="\n")
    with pd.option_context("display.width", 200, "display.max_rows", None, "display.max_colwidth", 70):
        print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
