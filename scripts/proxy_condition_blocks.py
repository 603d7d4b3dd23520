"""The *Proxy conditions* blocks of the TABED page, generated from committed rows (registered in
``update_docs_tables.BLOCKS``; the multilingual page's are ``specdec.multilingual.docs``'):

- ``t1b-measured``: the target's greedy first answers against the scripted ones (T1b rows), the rebuilt second turns
  (``tabed_first_answers.csv``, ``tabed_runs.csv``) and the findings on the scripted against the own first answers
  (``tabed.findings.findings_from_results`` on today's rows and on those of ``SCRIPTED``);
- ``t2-measured``: answer lengths and how often the window h can cover every past verified position (T2 rows);
- ``t5-measured``: the same on Table 3's long-answer pair, per training seed (T5 rows);
- ``tabed-second-turn-images``: the target's held-out second-turn loss with real and with blank images.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
from generated_blocks import ROOT, md_table

from specdec import results
from specdec.markdown import percent, span

# The last commit whose tabed_runs.csv decodes the second turns on the scene generator's scripted first answers
# (the next one, 26cd80d, decoded them again on the target's own).
SCRIPTED = "11f8b8d9eebe23c3486fb74818715d4261154a2e"
SCENARIOS = {
    "describe": "describe",
    "docvqa": "DocVQA",
    "pope": "POPE",
    "mmvet": "MM-Vet",
    "iedit": "IEdit",
    "magicbrush": "MagicBrush",
    "spot": "Spot",
    "nq": "NQ",
    "gsm8k": "GSM8K",
}
IMAGE_SETS = ("describe", "docvqa", "pope", "mmvet", "iedit", "magicbrush", "spot")  # NQ and GSM8K: text only
T1B_CLAIMS = {
    "T1b": "T − M on second turns",
    "T1b-prev": "rests on the first answer or the image",
    "T1b-text": "NQ / GSM8K after an image conversation",
    "T1": "smallest of T1a, T1b, T1c",
    "T2": "MT\\* best or second best, share of cells",
    "T4": "τ(MTCP\\*) − τ(MT\\*), more drafting methods",
}


class NoHistory(RuntimeError):
    """The git history that holds ``SCRIPTED`` is not in this checkout (a shallow clone or an export)."""


# ----------------------------------------------------------------------------------------------------- TABED
def scripted_root() -> Path:
    """A results folder holding ``SCRIPTED``'s ``tiny/tabed_runs.csv`` (from git); NoHistory where git lacks it."""
    folder = ROOT / ".cache" / f"tabed-scripted-{SCRIPTED[:12]}"
    path = folder / "tiny" / "tabed_runs.csv"
    if not path.exists():
        show = subprocess.run(
            ["git", "show", f"{SCRIPTED}:results/tiny/tabed_runs.csv"], cwd=ROOT, capture_output=True, check=False
        )
        if show.returncode:
            raise NoHistory(f"commit {SCRIPTED[:7]} is not in this checkout: {show.stderr.decode().strip()}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.part")
        tmp.write_bytes(show.stdout)
        tmp.replace(path)
    return folder


def runs_only_root(root: Path | None = None) -> Path:
    """A results folder holding only ``root``'s ``tiny/tabed_runs.csv``, so that the findings read from it compare
    with ``scripted_root``'s like for like: one draft seed, T5 on the shipped pair (no ``tabed_windows`` and no
    ``tabed_runs_seeds`` rows, which the scripted commit did not have)."""
    source = Path(root or results.COMMITTED) / "tiny" / "tabed_runs.csv"
    folder = ROOT / ".cache" / "tabed-runs-only"
    path = folder / "tiny" / "tabed_runs.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.part")
    tmp.write_bytes(source.read_bytes())
    tmp.replace(path)
    return folder


def second_turns(root: Path | None = None) -> str:
    """The rebuilt second turns: their first answers' length, how many differ from the script, and whether the runs
    on unchanged requests are the scripted runs."""
    base = Path(root or results.COMMITTED) / "tiny"
    answers = pd.read_csv(base / "tabed_first_answers.csv")
    length = answers.output.map(lambda ids: len(ids.strip("[]").split(",")))
    now, before = (pd.read_csv(p / "tabed_runs.csv") for p in (base, scripted_root() / "tiny"))
    now, before = now[now.turn == 2], before[before.turn == 2]
    requests = now.drop_duplicates("row").set_index("row").request
    scripted = before.drop_duplicates("row").set_index("row").request.reindex(requests.index)
    changed = requests != scripted
    key = ["method", "gamma", "window", "criterion", "captioner", "row"]
    same = now[~now.row.isin(changed[changed].index)]
    old = before[before.row.isin(same.row)]
    values = ["accepted", "output", "new_tokens", "target_calls"]
    merged = same.merge(old, on=key, how="left", suffixes=("", " old"))
    exact = len(same) == len(old) and all(
        merged[c].astype(str).eq(merged[f"{c} old"].astype(str)).all() for c in values
    )
    return (
        f"The {len(answers):,} second-turn requests carry first answers of {length.mean():.1f} tokens on average"
        + (" (none reaches the cap)." if length.max() < answers.max_new_tokens.min() else ".")
        + f" On {changed.sum():,} of them ({percent(changed.mean())}) the answer differs from the script, so their"
        f" prompts and request digests differ from the scripted requests'. The {len(now):,} second-turn runs of"
        f" notebooks 10–13 in `tabed_runs.csv` are decoded on these requests (AR and every method, setting and"
        f" sweep), and " + ("every stored speculative run is lossless" if now.lossless.fillna(True).all()
                        else "not every stored speculative run is lossless")
        + f". On the {(~changed).sum():,} requests whose prompt is the same with either first answer, the runs are"
        + (" the scripted requests' runs exactly." if exact else " not all the scripted requests' runs.")
    )  # fmt: skip


def verdict_cell(v) -> str:
    sign = "" if v.name == "T2" else "+"
    return f"{v.estimate:{sign}.3f} [{v.low:.3f}, {v.high:.3f}], {v.n}: {v.status}".replace("-", "−")


def t1b_block(root: Path | None = None) -> str:
    """The T1b measurement per scenario, the rebuilt second turns, and the findings on the scripted against the
    target's own first answers."""
    from specdec.tabed import findings

    m = results.proxy_conditions("T1b", root)
    reproduces = m.loc["target reproduces the scripted first answer"]
    prefix = m.value["share of the scripted answer before the first difference"]
    carried = m.value["second turn carries the target's greedy first answer"]
    rows = [
        {
            "scenario": name,
            "target's answer = scripted": f"{round(reproduces.value[s] * reproduces.n[s])} / {reproduces.n[s]}",
            "share of the scripted answer before the first difference": percent(prefix[s]),
            "second turn carries the target's answer": f"{carried[s]:.2f}",
        }
        for s, name in SCENARIOS.items()
    ]
    table = md_table(rows, list(rows[0]), align=1)
    low, high = prefix.idxmin(), prefix.idxmax()
    measured = (
        f"{table}\n\nOn the first turn of {span(reproduces.n, ',')} second-turn requests per scenario, the target's"
        f" greedy answer equals the scripted one on {span(reproduces.value * reproduces.n, '.0f')} of them; before"
        f" the first differing token it follows {percent(prefix[low])} ({SCENARIOS[low]}) to {percent(prefix[high])}"
        f" ({SCENARIOS[high]}) of the scripted answer. Decoded live, the first answer each rebuilt request carries"
        f" equals the target's greedy decode of its first turn on a share of {span(carried)} of the requests in"
        " every scenario."
    )
    own = {v.name: v for v in findings.findings_from_results("tiny", root=runs_only_root(root))}
    scripted = {v.name: v for v in findings.findings_from_results("tiny", root=scripted_root())}
    differ = [n for n in own if (own[n].estimate, own[n].status) != (scripted[n].estimate, scripted[n].status)]
    rows = [
        {
            "finding": f"{n} ({T1B_CLAIMS.get(n, own[n].claim)})",
            "scripted": verdict_cell(scripted[n]),
            "own": verdict_cell(own[n]),
        }
        for n in differ
    ]
    header = ["finding", "scripted first answer", "target's own first answer (shipped)"]
    compare = md_table(rows, list(rows[0]), header, align=3)
    flips = [f"{n} ({scripted[n].status} → {own[n].status})" for n in differ if scripted[n].status != own[n].status]
    same = [n for n in own if n not in differ]
    return (
        f"{measured}\n\n{second_turns(root)}\n\nScripted against own first answers (`findings_from_results`, γ = 5,"
        f" h = ALL, on the rows of commit {SCRIPTED[:7]} and on the committed rows; estimate [95 % interval], n:"
        f" verdict):\n\n"
        f"{compare}\n\n{', '.join(same[:-1])} and {same[-1]} are the same on both. "
        + (f"Verdicts that change: {'; '.join(flips)}." if flips else "No verdict changes.")
    )


def second_turn_images_block() -> str:
    """How much ``tabed-target``'s held-out answer loss on the second turns of the image scenarios rises with blank
    images (its ``training_log.json``)."""
    import json

    from specdec import zoo
    from specdec.vlm import scenes

    log = json.loads((zoo.model_dir("tabed-target") / "training_log.json").read_text())["summary"]["heldout"]
    images = [log[f"{s}-t2"] for s, turn in scenes.SCENARIOS if turn == 2 and f"{s}-t2" in log and s in IMAGE_SETS]
    real, blank = [c["loss"] for c in images], [c["loss_blank_images"] for c in images]
    return (
        f"`tabed-target`'s held-out answer loss on the second turns of the {len(images)} image scenarios is"
        f" {span(real)} with the real images and {span(blank)} with blank ones (`training_log.json`, per scenario)."
    )


def t2_block(root: Path | None = None) -> str:
    """Answer lengths, and per window h how often it can cover every past verified position and accepts as ALL."""
    m = results.proxy_conditions("T2", root)
    tokens = m.value["mean answer tokens"]
    n = m.n["mean answer tokens"]
    rows = [
        {
            "h": h,
            "can cover every past position": percent(m.value[(COVER, f"h={h}")]),
            "MT\\*(h) accepts as MT\\*(ALL)": percent(
                m.value[("share of requests where MT*(h) accepts as MT*(ALL)", f"h={h}")]
            ),
        }
        for h in (1, 4, 16)
    ]
    header = [
        "h",
        "share of requests h can cover every past verified position (at most)",
        "share of requests MT\\*(h) accepts exactly as MT\\*(ALL)",
    ]
    table = md_table(rows, list(rows[0]), header, align=1)
    cells = m.loc[("mean tau (MT*, gamma 5)", "Table 3 cells")]
    blocks = m.value[("mean blocks per request (MT*, gamma 5)", "Table 3 cells")]
    cover16 = m.value[(COVER, "h=16")]
    equal16 = m.value[("share of requests where MT*(h) accepts as MT*(ALL)", "h=16")]
    return (
        f"The {n['all AR requests']:,} plain-decoding answers average {tokens['all AR requests']:.1f} tokens (median"
        f" {m.value[('median answer tokens', 'all AR requests')]:.0f};"
        f" {percent(m.value[('share of answers of 48+ tokens', 'all AR requests')])} reach 48). The benchmark first"
        f" turns ({n['benchmark turn 1']} requests) average {tokens['benchmark turn 1']:.1f}, their second turns"
        f" ({n['benchmark turn 2']}) {tokens['benchmark turn 2']:.1f}, the NLP first and second turns"
        f" {tokens['nlp turn 1']:.1f} and {tokens['nlp turn 2']:.1f}, and the five-image stories"
        f" ({n['ood turn 1']}) {tokens['ood turn 1']:.1f}."
        f" Table 3's cells (the window study's {cells.n} requests among the benchmark first turns and the story sets)"
        f" were measured with MT\\* at γ = 5: τ {cells.value:.2f} and {blocks:.1f} blocks per request.\n\n{table}"
        + (
            "\n\nSo on this pair h = 16 is close to ALL by the length of the answers alone, and T5 (no h beats ALL)"
            " could hardly fail there."
            if cover16 > 0.5 and equal16 > 0.9
            else ""
        )
    )


def t5_block(root: Path | None = None) -> str:
    """Table 3's long-answer pair per training seed: answer lengths, τ, blocks, and per h the window's coverage."""
    from specdec.tabed import windows as tw

    m = results.proxy_conditions("T5", root).reset_index()
    m["seed"] = m.subset.str.extract(r"seed (\d+)", expand=False).astype(int)
    m["part"] = m.subset.str.split(": ").str[1]
    seeds = sorted(m.seed.unique())

    def value(quantity, part=None):
        rows = m[(m.quantity == quantity) & (m.part.isna() if part is None else m.part == part)]
        return rows.set_index("seed").value

    rows = [
        {
            "training seed": k,
            "answer tokens, benchmark / stories": f"{value('mean answer tokens', 'benchmark turn 1')[k]:.1f} /"
            f" {value('mean answer tokens', 'ood')[k]:.1f}",
            "τ (MT\\*, ALL)": f"{value('mean tau (MT*, gamma 5)')[k]:.2f}",
            "blocks per request": f"{value('mean blocks per request (MT*, gamma 5)')[k]:.1f}",
            **{
                f"h = {h} can cover all / accepts as ALL": f"{percent(value(COVER, f'h={h}')[k])} /"
                f" {percent(value(EQUAL, f'h={h}')[k])}"
                for h in (1, 4, 16)
            },
        }
        for k in seeds
    ]
    table = md_table(rows, list(rows[0]), list(rows[0]), align=1)
    level = tw.t5_validity(root)[0]
    check = "passed" if level != "no" else "failed"
    n = int(m[m.quantity == "mean tau (MT*, gamma 5)"].n.iloc[0])
    return (
        f"Table 3's {n} requests decoded by `tabed-target-long` / `tabed-draft-long`, training seeds"
        f" {', '.join(map(str, seeds))} (`results/tiny/tabed_windows.csv`; `T5` rows):\n\n{table}\n\n"
        f"Check {check}: the answers average at least {tw.T5_MIN_ANSWER} tokens in both groups on every seed, and"
        f" h = 16 can cover every past verified position on fewer than {percent(tw.T5_MAX_COVERED)} of the requests."
        if level != "no"
        else f"Check {check} ({tw.t5_validity(root)[1]})."
    )


COVER = "share of requests where h can cover every past verified position"  # tabed.windows.COVER_QUANTITY
EQUAL = "share of requests where MT*(h) accepts as MT*(ALL)"
