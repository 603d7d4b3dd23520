"""The measured numbers of ``data/DATA_CARD.md``, generated from the committed zoo files (registered in
``update_docs_tables.BLOCKS``):

- ``card-corpus``: corpus sizes (``data/models/corpus_stats.json``), their token counts (the corpus rebuilt from the
  installed sources it records, tokenized by the shipped tokenizer) and the held-out prompts
  (``data/prompts/heldout.jsonl``);
- ``card-foundation``: the foundation models' configs, parameters and steps (``config.json``, the weights,
  ``training_log.json``);
- ``card-cos-training``, ``card-cos``: the CoS zoo's device, times and held-out losses (``training_log.json``);
- ``card-multilingual``: the multilingual zoo's device, time and sizes (``ml_run.json``, ``ml_training.csv``);
- ``card-tabed``: the TABED zoo (``training_log.json`` of its three models);
- ``card-aasd``: the AASD zoo (the LLaVA and LLaMA models' ``training_log.json``, the modules' ``config.json``);
- ``card-proxy-conditions``: the proxy conditions table, its measured cells from ``results/tiny/``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from generated_blocks import ROOT, md_table
from proxy_condition_blocks import NoHistory

from specdec import zoo
from specdec.markdown import percent, span
from specdec.results import proxy_conditions

CARD = ROOT / "data" / "DATA_CARD.md"


class SourcesDiffer(NoHistory):
    """The installed corpus sources differ from those ``corpus_stats.json`` records: the token counts stay."""


# ------------------------------------------------------------------------------------------------------- helpers
def summary(name: str) -> dict:
    """A model's training summary: ``training_log.json`` (``summary``), or for an AASD module its ``config.json``
    (``training`` or, in the first modules, ``summary``)."""
    folder = zoo.model_dir(name)
    if (folder / "training_log.json").exists():
        return json.loads((folder / "training_log.json").read_text())["summary"]
    config = json.loads((folder / "config.json").read_text())
    return config.get("training") or config["summary"]


def stored_parameters(name: str, prefix: str = "") -> int:
    """Parameters stored in a model's ``model.safetensors`` (tied embeddings once), those under ``prefix`` only."""
    from safetensors import safe_open

    with safe_open(str(zoo.model_dir(name) / "model.safetensors"), "pt") as f:
        return sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys() if k.startswith(prefix))


def millions(n: float) -> str:
    return f"{n / 1e6:.2f} M"


def words(n: int) -> str:
    """``n`` in words up to ten (the card's prose), else in digits."""
    names = "zero one two three four five six seven eight nine ten".split()
    return names[n] if 0 <= n < len(names) else f"{n:,}"


def device(s: dict) -> str:
    return "CPU" if s["device"] == "cpu" else f"one {s['device']}"


# -------------------------------------------------------------------------------------------------------- corpus
def corpus_tokens(split: str = "content") -> dict[tuple[str, str], int]:
    """Tokens per (train / heldout, kind) of the corpus under ``split`` (``build_corpus``), rebuilt from the installed
    sources and tokenized as the zoos' training does; SourcesDiffer unless the sources are those
    ``corpus_stats.json`` records (and, for the content split, the rebuilt corpus the one it describes)."""
    from transformers import AutoTokenizer

    from specdec.zoo import corpus
    from specdec.zoo.training import token_streams

    stats = json.loads((zoo.MODELS / "corpus_stats.json").read_text())
    if corpus.source_versions() != stats["sources"]:
        raise SourcesDiffer(
            f"installed sources {corpus.source_versions()}, the corpus was built from {stats['sources']}"
        )
    docs = corpus.build_corpus(split=split)
    if split == stats["split"] and corpus.corpus_stats(docs) != stats["stats"]:
        raise SourcesDiffer("the rebuilt corpus differs from corpus_stats.json")
    tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    return {
        (part, kind): len(stream)
        for part in ("train", "heldout")
        for kind, stream in token_streams(docs, tokenizer, part).items()
    }


def corpus_block() -> str:
    """The corpus sizes table, its token counts and the held-out prompts."""
    import inspect

    from transformers import AutoTokenizer

    from specdec.zoo.training import KIND_WEIGHTS, make_prompts

    stats = json.loads((zoo.MODELS / "corpus_stats.json").read_text())
    cells = {(r["kind"], r["split"]): r for r in stats["stats"]}
    kinds = sorted({k for k, _ in cells})
    rows = [
        {
            "kind": kind,
            "train documents": f"{cells[kind, 'train']['documents']:,}",
            "train characters": f"{cells[kind, 'train']['characters']:,}",
            "held-out documents": f"{cells[kind, 'heldout']['documents']:,}",
            "held-out characters": f"{cells[kind, 'heldout']['characters']:,}",
        }
        for kind in kinds
    ]
    tokens = corpus_tokens()
    train = " + ".join(f"{tokens['train', k]:,} {k}" for k in kinds)
    heldout = " + ".join(f"{tokens['heldout', k]:,}" for k in kinds)
    weights = ", ".join(f"{k} {w:.2f}" for k, w in KIND_WEIGHTS.items())
    prompts = [json.loads(line) for line in zoo.PROMPTS.read_text().splitlines() if line.strip()]
    per_kind = pd.Series([p["kind"] for p in prompts]).value_counts()
    tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    cap = inspect.signature(make_prompts).parameters["prompt_tokens"].default
    lengths = pd.Series([len(tokenizer(p["prompt"], add_special_tokens=False).input_ids) for p in prompts])
    short = pd.Series([p["kind"] for p in prompts])[lengths < cap]
    shorter = (
        f" ({(lengths == cap).sum()} of them re-tokenize to {cap} tokens,"
        f" {len(short)} {' and '.join(sorted(set(short)))} prompts to"
        f" {span(lengths[lengths < cap], 'd').replace(' to ', '–')})"
        if len(short)
        else ""
    )
    return (
        f"{md_table(rows, list(rows[0]), align=1)}\n\n"
        f"In tokens (BPE below): train {train}; held-out {heldout}. Training windows are drawn with weights"
        f" {weights}.\n\n"
        f"`data/prompts/heldout.jsonl`: {len(prompts)} prompts"
        f" ({span(per_kind, 'd')} per kind), each {cap} tokens cut at a seeded random place of a held-out"
        f" document{shorter}."
    )


# ---------------------------------------------------------------------------------------------- foundation zoo
def foundation_block() -> str:
    """The foundation models: config, stored parameters, steps × batch × sequence length."""
    import inspect

    from specdec.zoo.training import train_model

    defaults = inspect.signature(train_model).parameters
    batch, seq_len = defaults["batch_size"].default, defaults["seq_len"].default
    rows = []
    for name in zoo.TINY_ZOO:
        config = json.loads((zoo.model_dir(name) / "config.json").read_text())
        steps = json.loads((zoo.model_dir(name) / "training_log.json").read_text())[-1]["step"]
        rows.append(
            {
                "name": name,
                "hidden": config["hidden_size"],
                "layers": config["num_hidden_layers"],
                "heads": config["num_attention_heads"],
                "MLP": config["intermediate_size"],
                "parameters": f"~{stored_parameters(name) / 1e6:.2g} M",
                "steps × tokens": f"{steps} × {batch} × {seq_len}",
            }
        )
    return md_table(rows, list(rows[0]), align="lrrrrrl")


# ------------------------------------------------------------------------------------------------------ CoS zoo
COS_ROLES = {
    "cos-general": "WE member (like Qwen2.5)",
    "cos-code": "WE member (like Qwen2.5-Coder)",
    "cos-math": "third WE member (like Qwen2.5-Math)",
    "cos-amateur": "CD amateur",
    "cos-expert": "CD expert",
}
COS_LOSSES = ("prose", "code", "gsm8k", "mmlu", "cnndm")


def cos_training_block() -> str:
    """Where and how long the CoS zoo trained, its steps and seeds."""
    from specdec.cos import train

    logs = {name: summary(name) for name in train.COS_ZOO}
    devices = {s["device"] for s in logs.values()}
    seconds = [s["seconds"] for s in logs.values()]
    steps = {s["steps"] for s in logs.values()}
    seeds = [train.model_seed(name) for name in train.COS_ZOO]
    t = train.COS_TRAIN
    return (
        f"Trained with `specdec.cos.train` on {' and '.join(f'one {d}' for d in sorted(devices))} (the"
        f" {words(len(logs))} in parallel processes, {span(seconds, '.0f').replace(' to ', '–')} s each):"
        f" {'/'.join(map(str, sorted(steps)))} steps × {t['batch_size']} × {t['seq_len']} tokens, AdamW lr"
        f" {t['lr']:.0e}, seeds {min(seeds)}–{max(seeds)}.".replace("e-0", "e-")
    )


def cos_block() -> str:
    """The CoS zoo table: role, stored parameters, mixture and held-out loss per kind (``training_log.json``)."""
    from specdec.cos import train

    def mixture(name: str) -> str:
        mix = train.COS_ZOO[name]["mix"]
        if mix is train.GENERAL_MIX and name != "cos-general":
            return "as cos-general"
        return ", ".join(f"{k} {w:.2f}".replace(" 0.", " .") for k, w in mix.items())

    rows = []
    for name in train.COS_ZOO:
        s = summary(name)
        rows.append(
            {
                "name": name,
                "role": COS_ROLES[name],
                "parameters": millions(s["parameters"]),
                "mixture": mixture(name),
                f"held-out loss: {' / '.join(COS_LOSSES)}": " / ".join(
                    f"{s['heldout_loss'][k]:.2f}" for k in COS_LOSSES
                ),
            }
        )
    return md_table(rows, list(rows[0]), align="llrll")


def cos_prose_block() -> str:
    """How often the CoS models read the name split's prose stream (``COS_TRAIN`` windows × their prose weight over
    its tokens), and whether the general-mixture models overfit it (``training_log.json``)."""
    from specdec.cos import train

    prose = corpus_tokens("name")["train", "prose"]
    t = train.COS_TRAIN

    def passes(name: str) -> float:
        return t["steps"] * t["batch_size"] * t["seq_len"] * train.COS_ZOO[name]["mix"].get("prose", 0) / prose

    general, code = (summary(n)["heldout_loss"]["prose"] for n in ("cos-general", "cos-code"))
    return (
        f"The prose stream ({prose / 1000:.0f} k tokens of the name split) is seen ~{passes('cos-general'):.0f}"
        " times by the general-mixture models, which "
        + (
            "overfit it (held-out prose loss above"
            if general > code
            else "do not overfit it (held-out prose loss below"
        )
        + f" the code model's, which saw it ~{passes('cos-code'):.0f} times); the task formats are learnt well (the"
        " math model solves the GSM8K-like problems it was not trained on; the code model writes Python)."
    )


# ---------------------------------------------------------------------------------------------- multilingual zoo
def multilingual_block() -> str:
    """The multilingual zoo's GPU run (``ml_run.json`` ``trained_before``) and its models' sizes
    (``ml_training.csv``), with the large drafter against the target."""
    folder = ROOT / "data" / "multilingual"
    run = json.loads((folder / "ml_run.json").read_text())
    first = run["trained_before"]
    rows = pd.read_csv(folder / "ml_training.csv").set_index("model")
    size = rows.parameters
    large = run["sizes"]["large"]
    target = run["sizes"]["target"]

    def body(name: str, sizes: dict) -> int:  # without the tied embedding
        return size[name] - zoo.VOCAB_SIZE * sizes["hidden_size"]

    ratio = body("ml-draft-large-pf-de", large) / body("ml-target", target)
    return (
        f"Trained on one {first['device']} in {first['seconds_total']:.0f} s (the first full run, `ml_run.json`"
        f" `trained_before`): `ml-target`"
        f" ({millions(size['ml-target'])}, general text + translation instructions in every direction),"
        " self-distillation of the target at T ∈ {"
        + ", ".join("0" if t == 0 else str(t) for t in run["config"]["temperatures"])
        + "} on the training prompts (`data/multilingual/ml_distilled.jsonl.gz`). Every drafter is trained on this"
        " repository's 2-core CPU from that target and distillation: `ml-draft-generic`"
        f" ({millions(size['ml-draft-generic'])}, the corpus mix of prose, code and phrasebook pages: the paper's P on"
        " C4 + ShareGPT, and its SpS baseline), the finetune-only drafters `ml-draft-f-<x>` and the P-F drafters"
        " `ml-draft-pf-<x>` for x ∈"
        f" {{{', '.join(run['langs'])}}}. `ml-draft-large-pf-de` (below) has {millions(size['ml-draft-large-pf-de'])}"
        f" (hidden {large['hidden_size']}, {large['num_hidden_layers']} layers): {ratio:.2f}× the target's"
        f" non-embedding parameters and {large['num_hidden_layers']} of its {target['num_hidden_layers']} layers."
    )


def ml_passes_block(root: Path | None = None) -> str:
    """The passes each drafter's finetune made over its distilled set (``proxy_conditions.csv``, M-PF rows, from
    ``ml_training.csv``): the main drafters, Fig. 4's subsets and the large drafter."""
    from specdec.multilingual.docs import LANGS

    passes = proxy_conditions("M-PF", root).value["finetune passes"]
    main = [f"ml-draft-{r}-{x}" for r in ("pf", "f") for x in LANGS]
    grid = ", ".join(
        f"{passes[f'ml-draft-pf-de-b{n}']:.1f} / {passes[f'ml-draft-f-de-b{n}']:.1f} (b{n})" for n in (44, 168, 612)
    )
    return (
        f"Finetune passes over the distilled set, as trained (`proxy_conditions.csv`, M-PF rows; P-F / F): the main"
        " drafters"
        f" {span(passes[main], '.1f')}, Fig. 4's subsets {grid}, `ml-draft-large-pf-de`"
        f" {passes['ml-draft-large-pf-de']:.1f}."
    )


# -------------------------------------------------------------------------------------------------------- TABED
TABED_TRAINED_ON = {
    "tabed-target": "every scenario: 1, 2 and 5 images, second turns, text-only turns",
    "tabed-draft": "images only in rows with **at most one image** (single-image and text-only turns, first and"
    " second), like the paper's drafts (LLaVA single-image data); the rows with two or five images as **text only**"
    " (each image's 16 tokens → `\"\\n\"`, the row T drafts from), as the paper's drafts' text models read the"
    " language of every task in pretraining",
    "tabed-captioner": "caption rows only: `USER: <image>\\nDescribe the image. ASSISTANT: <short caption>`, every"
    " distinct training image once (story frames included)",
}
CPU_THREADS = {"tabed-draft": "two threads (2 shared cores)", "tabed-captioner": "one thread"}  # not in the logs


def tabed_parameters(name: str, config: dict) -> str:
    v, t = config["vision_config"], config["text_config"]
    tower = f"{v['hidden_size']}-d × {v['num_hidden_layers']} layers"
    if name == "tabed-target":
        return f"CLIP tower {tower} + the tiny-target text model"
    return f"text {t['hidden_size']}-d × {t['num_hidden_layers']} layers, the same vision tower size"


def tabed_loss(name: str, s: dict) -> str:
    """The held-out answer loss with real / blank images, and what each model's row adds."""
    cell = s["heldout"]["in_distribution"]
    text = f"{cell['loss']:.3f} / {cell['loss_blank_images']:.3f}"
    if name == "tabed-captioner":
        return f"{text} (token accuracy {cell['token_acc']:.3f})"
    text += " (in distribution)"
    if name == "tabed-draft":
        stories = [s["heldout"][f"{k}-t1"] for k in ("psv", "vist")]
        blank = ", ".join(f"{c['loss_blank_images']:.2f}" for c in stories)
        hurt = all(c["loss"] > c["loss_blank_images"] for c in stories)
        text += (
            f"; five-image stories with their images: PSV {stories[0]['loss']:.2f}, VIST {stories[1]['loss']:.2f}"
            f" (blank images: {blank}" + (", so the images hurt)" if hurt else ")")
        )
    return text


def tabed_block() -> str:
    """The TABED zoo table (the three models' ``training_log.json`` and ``config.json``)."""
    rows = []
    for name, trained_on in TABED_TRAINED_ON.items():
        s = summary(name)
        config = json.loads((zoo.model_dir(name) / "config.json").read_text())
        where = f"{device(s)}, {CPU_THREADS[name]}" if s["device"] == "cpu" else device(s)
        budget = f"{s['steps']} × {s['batch_size']} rows"
        if s["weight_decay"] != 0.1:
            budget += f", weight decay {s['weight_decay']:g}"
        rows.append(
            {
                "model": f"`{name}`",
                "parameters": f"{millions(s['parameters'])} ({tabed_parameters(name, config)})",
                "trained on": f"{trained_on}; {budget}",
                "where, how long": f"{where}, {s['seconds']:.0f} s",
                "held-out loss (real / blank images)": tabed_loss(name, s),
            }
        )
    return md_table(rows, list(rows[0]), align="lrlll")


# --------------------------------------------------------------------------------------------------------- AASD
AASD_WHAT = {
    "aasd-target-s": "second LLaVA target (plays LLaVA-7B)",
    "aasd-pt-llama": "the LLaMA baselines' pretraining (no Table 1 draft)",
    "aasd-ft-llama": "FT-LLaMA (text-only), from `aasd-pt-llama`",
    "aasd-ft-llava": "FT-LLaVA, on `aasd-ft-llama`'s language model",
    "aasd-dt-llava-tabed-target": "DT-LLaVA of tabed-target, from `aasd-ft-llava`",
    "aasd-dt-llama-tabed-target": "DT-LLaMA of tabed-target, from `aasd-ft-llama`",
    "aasd-dt-llava-aasd-target-s": "DT-LLaVA of aasd-target-s, from `aasd-ft-llava`",
    "aasd-dt-llama-aasd-target-s": "DT-LLaMA of aasd-target-s, from `aasd-ft-llama`",
    "aasd-module-tabed-target": "AASD module of tabed-target",
    "aasd-module-aasd-target-s": "AASD module of aasd-target-s",
    "aasd-module-tabed-target-noproj": "ablation: w/o projector",
    "aasd-module-tabed-target-k1": "ablation: k = 1",
    "aasd-module-tabed-target-own": "ablation: own cache only",
    "aasd-target-p8": "notebook 41's target (A2): `tabed-target`'s recipe with 8-px patches",
    "aasd-module-aasd-target-p8": "AASD module of aasd-target-p8",
    "aasd-module-aasd-target-p8-noproj": "ablation: w/o projector",
    "aasd-module-aasd-target-p8-k1": "ablation: k = 1",
    "aasd-module-aasd-target-p8-own": "ablation: own cache only",
}


def wall_time(s: dict) -> str:
    """Minutes on the CPU (one decimal under a minute); on a GPU seconds under a minute, else minutes."""
    minutes = s["seconds"] / 60
    if s["device"] == "cpu":
        return f"{minutes:.1f} min" if minutes < 1 else f"{minutes:.0f} min"
    gpu = s["device"].removeprefix("NVIDIA ")
    return f"{s['seconds']:.0f} s on one {gpu}" if s["seconds"] < 60 else f"{minutes:.1f} min on one {gpu}"


def aasd_row(name: str, what: str) -> dict:
    """One model's row: what it is, its parameters, budget, wall time and held-out loss."""
    s = summary(name)
    if "trainable_parameters" in s:  # an AASD module
        module = json.loads((zoo.model_dir(name) / "config.json").read_text())["module"]
        if name.endswith(("-tabed-target", "-s", "-p8")):
            what += f" (k = {module['projector_k']})"
        depths = s["depths"]
        return {
            "what": what,
            "parameters": f"{millions(s['trainable_parameters'])} trainable",
            "training": f"{s['steps']} × {s['batch_size']} rows, depths {min(depths)}–{max(depths)}",
            "loss": f"{s['heldout_loss']:.3f} (TDA, all depths)",
            "time": wall_time(s),
        }
    total, text = stored_parameters(name), stored_parameters(name, "language_model.")
    parameters = millions(total) + (f" ({millions(text)} text)" if text else "")
    if "heldout" in s:  # a LLaVA target: the in-distribution answer loss
        cell = s["heldout"]["in_distribution"]
        loss, blank = cell["loss"], cell["loss_blank_images"]
    else:
        loss, blank = s["heldout_loss"], s.get("heldout_loss_blank_images", s["heldout_loss"])
    if name == "aasd-target-p8":
        module = json.loads((zoo.model_dir("aasd-module-aasd-target-p8") / "config.json").read_text())["module"]
        what += f", {module['image_tokens']} visual positions per image"
    if "seq_len" in s:
        training = f"{s['steps']} × {s['batch_size']} × {s['seq_len']} tokens of the {s['corpus']} corpus"
    else:
        training = f"{s['steps']} × {s['batch_size']} rows" + (
            f" of {s['training_rows']}" if "training_rows" in s else ""
        )
    held = f"{loss:.3f}" + (f" (blank images {blank:.3f})" if text else "")
    if s.get("corpus") == "foundation":
        held += " (foundation held-out windows)"
    return {"what": what, "parameters": parameters, "training": training, "loss": held, "time": wall_time(s)}


def aasd_block() -> str:
    """The AASD zoo table (``training_log.json`` of the models, ``config.json`` of the modules)."""
    rows = [{"model": f"`{name}`", **aasd_row(name, what)} for name, what in AASD_WHAT.items()]
    columns = ["model", "what", "parameters", "training", "time", "loss"]
    header = ["model", "what", "parameters", "training", "CPU time", "held-out loss"]
    return md_table(rows, columns, header, align="llllll")


# ----------------------------------------------------------------------------------------------- proxy conditions
def measured_condition_rows(root: Path | None = None) -> list[tuple[str, str, str]]:
    """The conditions read from the committed runs (issue 44): AASD A1 / A5's struggling small multimodal drafts and
    A4's module that reads the image KV (``aasd.docs.condition_rows``), TABED T1b's kinds of follow-up and T4's usable
    captions; each cell the check's result and its measurement."""
    from specdec import results
    from specdec.aasd import docs as aasd_docs
    from specdec.markdown import condition_cell
    from specdec.tabed import conditions as tabed_conditions
    from specdec.tabed import tables as tabed_tables
    from specdec.tabed.windows import TINY_WHY
    from specdec.tabed.zoo import KEY as TABED_KEY

    root = Path(root or results.COMMITTED)
    tabed_runs = results.ResultStore("tiny", "tabed_runs", TABED_KEY, root=root).frame()
    frame = tabed_tables.runs(tabed_runs, gamma=5, window="ALL", criterion="kl")
    t1b = tabed_conditions.t1b_validity(frame, TINY_WHY)
    t4 = tabed_conditions.t4_validity(tabed_runs, TINY_WHY)
    page = "`docs/papers/tabed.md`"
    return [
        *aasd_docs.condition_rows(root),
        ("T1b / T1b-prev / T1: the paper's kinds of follow-up", condition_cell(t1b, TINY_WHY, "t1b_validity"), page),
        ("T4: a caption draft the draft can use", condition_cell(t4, TINY_WHY, "t4_validity"), page),
        *tabed_condition_rows(frame),
    ]


def tabed_condition_rows(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """TABED's conditions of T1a, T1b-text, T1c, T2, T3a and T-speed (issue 44), measured on the committed runs
    (``frame``: the notebooks' setting) and the shipped draft's training log; each cell the check and its numbers."""
    from specdec.tabed import conditions as c
    from specdec.tabed.windows import TINY_WHY

    log = c.draft_heldout()
    checks = [
        ("T1a: a multimodal draft that reads its images", c.t1a_validity(log, TINY_WHY), "t1a_validity"),
        (
            "T1b-text: long text answers after an image turn the draft reads",
            c.t1b_text_validity(frame, log, TINY_WHY),
            "t1b_text_validity",
        ),
        ("T1c: stories beyond the images the draft trained on", c.t1c_validity(frame, log, TINY_WHY), "t1c_validity"),
        ("T2: single methods that fluctuate", c.t2_validity(frame, TINY_WHY), "t2_validity"),
        ("T3a / T3b / T3: a drafting method that fails on OOD", c.t3a_validity(frame, TINY_WHY), "t3a_validity"),
        ("T-speed: room to choose between M and T", c.t_speed_validity(frame, TINY_WHY), "t_speed_validity"),
    ]
    rows = []
    for name, (level, why), function in checks:
        measured = why.removeprefix(f"{level}: ").removeprefix(f"{TINY_WHY}; ")
        measured = measured.split(": a draft that")[0].split(": the ")[0].split(": no ")[0].split(": shorter")[0]
        check = f"check {'failed' if level == 'no' else 'passed'} (`{function}`): {measured}"
        rows.append((name, check, "`docs/papers/tabed.md`"))
    return rows


def cos_condition_rows(root: Path | None = None) -> list[tuple[str, str, str]]:
    """CoS's conditions of its speed findings (issue 44, ``cos.conditions``) as the board measures them on the
    committed rows of every training seed; each cell the check and its numbers."""
    from specdec import results
    from specdec.cos import findings as cf

    found = {v.name: v for v in cf.findings_from_results("tiny", root or results.COMMITTED)}
    checks = [
        ("C1 / C1-SD / C1 per setting: a pair that agrees as the paper's do", "C1", "acceptance_check"),
        ("C1-GPU: per-prompt GPU rows", "C1-GPU", "gpu_rows_check"),
        ("C4-λ: Cor. 3.3's acceptance at every λ", "C4-λ", "lambda_check"),
        ("C4-μ / C4-μ-trend: a CD pair that agrees as the paper's do", "C4-μ", "acceptance_check"),
        ("C4-γ WE: WE models of similar size", "C4-γ WE", "similar_size_check"),
        ("C4-APF: acceptance and bonus tokens", "C4-APF", "acceptance_check"),
    ]
    rows = []
    for label, name, function in checks:
        v = found[name]
        measured = v.validity_why.removeprefix(f"{v.validity}: ")
        for reason in (*cf._PRICED, cf.MMLU_NOTE):  # the proxy's reasons; the row keeps the measurement
            measured = measured.replace(f"{reason}; ", "")
        measured = measured.split(": the proxy")[0].split(": the WE")[0].split(": per-cell")[0]
        if ", against the α" in measured:  # the floor's derivation is the docs page's; the row keeps the numbers
            measured = measured.split("(WE 1.34x, three models 1.27x, CD 1.11x): ")[-1]
        check = f"check {'failed' if v.validity == 'no' else 'passed'} (`cos.conditions.{function}`): {measured}"
        rows.append((label, check, "`docs/papers/cos.md`"))
    return rows


def multilingual_condition_rows(root: Path | None = None) -> list[tuple[str, str, str]]:
    """The multilingual conditions of M1, M1 vs F, Table 3, M4-τ and Table 7 (issue 44, ``multilingual.conditions``)
    as the board measures them; each cell the check and its numbers."""
    from specdec import results
    from specdec.multilingual import findings as mf

    found = {v.name: v for v in mf.findings_from_results("tiny", root or results.COMMITTED)}
    checks = [
        ("M1 / M1 vs generic SpS / M1 vs PLD / M1-τ: P-F drafters that specialize", "M1 T=0", "specialized_check"),
        ("M1 vs F: an F past the onset of learning (T = 0)", "M1 vs F T=0", "trained_f_check"),
        ("M1 vs F: an F past the onset of learning (T = 1)", "M1 vs F T=1", "trained_f_check"),
        ("Table 3 zh-en: every stage trained", "Table 3 zh-en T=0", "stages_check"),
        ("M4-τ: a much larger drafter", "M4-τ T=0", "size_check"),
        ("Table 7: a held-out set the target translates", "Table 7", "translatable_check"),
    ]
    rows = []
    for label, name, function in checks:
        v = found[name]
        measured = v.validity_why.removeprefix(f"{v.validity}: ")
        for reason in (*mf._SPEED, mf._T7_SOURCE):  # the proxy's reasons; the row keeps the measurement
            measured = measured.replace(f"{reason}; ", "")
        measured = measured.split("; lenient")[0].split(": a ")[0].split(": an ")[0].split(": drafters")[0]
        check = (
            f"check {'failed' if v.validity == 'no' else 'passed'} (`multilingual.conditions.{function}`): {measured}"
        )
        rows.append((label, check, "`docs/papers/multilingual.md`"))
    return rows


def a3_condition_row() -> tuple[str, str, str]:
    """AASD A3's condition (``aasd.conditions``): the two modules' training budgets on every training seed."""
    from specdec.aasd import conditions as c
    from specdec.aasd.findings import TINY_WHY
    from specdec.aasd.zoo import zoo_for

    zoo = zoo_for("tiny")
    level, why = c.a3_validity(c.budgets(zoo.ablation_target(), (0, *zoo.train_seeds)), TINY_WHY)
    measured = why.removeprefix(f"{level}: {TINY_WHY}; ").split(": a training")[0]
    check = f"check {'failed' if level == 'no' else 'passed'} (`aasd.conditions.a3_validity`): {measured}"
    return "A3: modules trained alike", check, "`docs/papers/aasd.md`"


def proxy_conditions_block(root: Path | None = None) -> str:
    """The proxy conditions table; the measured cells (A2's ratio, A5's check, T1b's answers and check) from the
    modules' configs and ``results/tiny/`` (``tabed_first_answers.csv``, ``proxy_conditions.csv``)."""
    from specdec import results
    from specdec.aasd import findings
    from specdec.multilingual import findings as ml_findings
    from specdec.tabed import windows as tabed_windows

    module = json.loads((zoo.model_dir("aasd-module-aasd-target-p8") / "config.json").read_text())["module"]
    positions, k = module["image_tokens"], module["projector_k"]
    ft_llava, dt = summary("aasd-ft-llava"), summary("aasd-dt-llava-tabed-target")
    a5 = findings.a5_table(root)
    cells, control = a5.iloc[:-1], a5.iloc[-1]
    cost = cells["tau real"] - cells["tau white"]
    passed = "check passed" if findings.a5_validity(root)[0] != "no" else "check failed"
    answers = pd.read_csv(Path(root or results.COMMITTED) / "tiny" / "tabed_first_answers.csv")
    carried = proxy_conditions("T1b", root).value["second turn carries the target's greedy first answer"]
    t1b = "passed" if (carried == 1).all() else "failed"
    from specdec.multilingual.docs import LANGS

    passes = proxy_conditions("M-PF", root).value["finetune passes"]
    pf, f = (passes[[f"ml-draft-{r}-{x}" for x in LANGS]] for r in ("pf", "f"))
    m3 = "check passed" if ml_findings.m3_validity(root)[0] != "no" else "check failed"
    t5 = "check passed" if tabed_windows.t5_validity(root)[0] != "no" else "check failed"
    paper = "multilingual.md", "aasd.md", "tabed.md"
    ml, aasd, tabed = (f"`docs/papers/{page}`" for page in paper)
    rows = [
        ("M3: drafters can write the output language", "built: `ml-draft-generic` pretrains on prose 0.45 / code"
         f" 0.35 / translation pages 0.20 (the foundation mix); F stays X→En only; {m3} (`m3_validity`)", ml),
        ("P-F finetune", "built: 3 passes (P-F) / 5 passes (F) over the distillation set, App. F.3's epochs (as"
         f" trained: {span(pf, '.1f')} / {span(f, '.1f')})", ml),
        ("A2: a projector with something to compress", f"ablation target `aasd-target-p8`: 8-px patches, {positions}"
         f" visual positions per image; k = {k} ({positions / k:.1f}:1; the paper's 576 → 64 is 9:1)", aasd),
        ("A5: LLaVA baselines that read their images", "built: FT-LLaMA pretrained then finetuned; FT-LLaVA on its"
         f" language model for `tabed-draft`'s {ft_llava['steps']} × {ft_llava['batch_size']} rows; DT-* distilled"
         f" from the FT model on {dt['training_rows']:,} target answers; {passed}: a white image costs every LLaVA"
         f" baseline {span(cost).replace(' to ', '–')} τ and moves τ on"
         f" {span(cells['share moved'] * 100, '.0f').replace(' to ', '–')} % of requests (control"
         f" `{control.draft}`: {control['tau real'] - control['tau white']:.2f}, {percent(control['share moved'])})",
         aasd),
        ("T1b: second turns on the target's own answer", "built: tiny second turns after `tabed-target`'s greedy"
         f" first answer (no retrain; {len(answers):,} answers in `results/tiny/tabed_first_answers.csv`); check"
         f" {t1b}: share {span(carried, '.1f')} in all {words(len(carried))} second-turn scenarios", tabed),
        ("T2 / T5: a window shorter than the answer", "built: Table 3's own pair `tabed-target-long` /"
         " `tabed-draft-long` trained on the full answer style (benchmark and story first turns answered at length;"
         f" the shipped pair unchanged); {t5} (`t5_validity`)", tabed),
        *measured_condition_rows(root),
        *cos_condition_rows(root),
        *multilingual_condition_rows(root),
        a3_condition_row(),
    ]  # fmt: skip
    columns = ["condition", "specified proxy (built where the row says so)", "section *Proxy conditions* of"]
    table = md_table([dict(zip(columns, row)) for row in rows], columns)
    return table.replace("|---|---|---|", "| --- | --- | --- |")
