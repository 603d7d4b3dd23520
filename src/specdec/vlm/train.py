"""The tiny TABED zoo: a LLaVA target and a LLaVA draft trained on the synthetic scenarios of ``specdec.vlm.scenes``.

Two steps, so the training can run on a machine without PIL or the corpus (e.g. a GPU box):

    python -m specdec.vlm.train data --out .gpu/tabed_data.pt      # render + tokenise a fixed training set
    python -m specdec.vlm.train train --data .gpu/tabed_data.pt --device cuda --out data/models \\
        --models tabed-target tabed-draft

``python -m specdec.vlm.train`` (step ``all``) does both here. The ``train`` step reads only the saved tensors.
``data --style full`` writes the data file of Table 3's pair (``tabed-target-long``, ``tabed-draft-long``: the
first turns answered at length, ``specdec.vlm.full_answers``); ``train`` trains, by default, every model of the data
file's style. ``--seeds 1 2`` trains training seeds k > 0 as ``<name>-seed<k>`` (``seeded``).

Models (``TABED_ZOO``): ``LlavaForConditionalGeneration`` with a CLIP vision tower (64 x 64 images, patch 16:
16 patches, CLS dropped, last layer's features), a 2-layer GELU projector and a Llama text model on the
foundation tokenizer (``data/models/tokenizer``, 4096 ids, nothing added). ``tabed-target`` has the text size of
``zoo.TINY_ZOO["tiny-target"]``; ``tabed-draft`` a ~10x smaller text model and a vision tower of the same size.
The target trains on every scenario (1, 2 and 5 images, second turns, text-only turns). The draft, like the
paper's drafts, is multimodal only on single-image data (LLaVA's): it sees images only in rows with at most one
image (``max_images``), so the two-image edit tasks and above all the five-image stories (PSV / VIST: 80 visual
tokens, 5x any it saw) are out of its distribution. Its text model, like the paper's (a language model
pretrained on text before its LLaVA training), has read the language of every task: rows with more images enter
its training as text only (``text_rows``: each image's run replaced by ``"\\n"``, the row T drafts from), so on
the stories text-only drafting (T) works and multimodal drafting (M) faces a context it never saw.
``tabed-captioner`` (the captioner of caption drafting C, in the role of the
paper's Florence-2) is an even smaller LLaVA trained only on the caption rows (``rows="caption"``: every
distinct training image once with its short caption, ``specdec.vlm.data.caption_split``).

Encoding and the data file (the image token, training rows, image storage and normalisation) are in
``specdec.vlm.data``; ``train`` refuses a data file whose processor uses another normalisation. Every model
is trained by ``specdec.zoo.training.train``. Weights are saved as float16 with a float32 config
(``specdec.zoo.training.save_half``), together with the processor and tokenizer files (written by the ``data``
step into the data file) and ``training_log.json``.

Training settings are per model (``TABED_ZOO[name]["train"]``: steps, batch size, lr, weight decay); the
command-line values override them for every model. ``training_log.json`` reports the held-out loss with the
real and with blank (all-white) images, overall, per ``scenario-tN`` and on ``in_distribution`` rows (no
``nq``, whose held-out facts never occur in training by construction of the split, and at most ``max_images``
images).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import torch

from specdec import zoo
from specdec.vlm import scenes
from specdec.vlm.batches import Images, Split, batch_inputs, in_distribution, spec_splits, split_args
from specdec.vlm.data import (
    DATA,
    IMAGE_TOKEN_ID,
    build_data,
)
from specdec.vlm.dialogues import ANSWER_STYLES
from specdec.zoo import cli, training
from specdec.zoo.training import device_name, save_half

VISION = dict(
    hidden_size=64,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    image_size=scenes.IMAGE_SIZE,
    patch_size=scenes.PATCH_SIZE,
    projection_dim=64,
)
TABED_TRAIN = dict(steps=3000, batch_size=64, lr=2e-3, weight_decay=0.1)
TABED_ZOO: dict[str, dict] = {
    "tabed-target": dict(
        text=zoo.TINY_ZOO["tiny-target"], vision=VISION, max_images=5, seed=0, train=dict(TABED_TRAIN, steps=3000)
    ),
    # the draft ran ~22 epochs over 400 rows / (scenario, turn) in 2500 steps (train loss 0.22; held-out 2.29 over
    # all rows, but 0.28 in distribution: nq and the five-image stories dominate the 2.29): ~5 epochs of the
    # 2.5x larger DATA, more weight decay
    "tabed-draft": dict(
        text=dict(
            hidden_size=48, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4
        ),
        vision=VISION,
        max_images=1,  # single-image and text-only rows, as the paper's drafts (LLaVA single-image data)
        text_rows=True,  # ... but reads the multi-image rows as text (T's rows): see the module docstring
        seed=1,
        train=dict(TABED_TRAIN, steps=1500, weight_decay=0.3),
    ),
    # Table 3's window study (T5): the same target and draft, trained on the "full" answer style of the data file
    # (``full_answers.FULL_ANSWERS``: the benchmark and story first turns answered at length), so that a window of h
    # past blocks is shorter than the answer. Shipped beside the main pair, which TABED's other tables and AASD use.
    "tabed-target-long": dict(
        text=zoo.TINY_ZOO["tiny-target"],
        vision=VISION,
        max_images=5,
        seed=0,
        style="full",
        train=dict(TABED_TRAIN, steps=3000),
    ),
    "tabed-draft-long": dict(
        text=dict(
            hidden_size=48, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4
        ),
        vision=VISION,
        max_images=1,
        text_rows=True,
        seed=1,
        style="full",
        train=dict(TABED_TRAIN, steps=1500, weight_decay=0.3),
    ),
    "tabed-captioner": dict(
        text=dict(
            hidden_size=32, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2
        ),
        vision=VISION,
        max_images=1,
        seed=2,
        rows="caption",  # caption rows only (data["caption_train"] / ["caption_heldout"])
        train=dict(TABED_TRAIN, steps=1500, weight_decay=0.1),
    ),
}


SEED_STEP = 1000  # training seed k of a model: its spec's seed + SEED_STEP * k, saved as <name>-seed<k>
TRAIN_SEEDS = (1, 2)  # the seeds trained beside 0: tabed-draft's (<= 15 CPU minutes) and Table 3's pair's (GPU)


def seeded(name: str, k: int) -> tuple[str, dict]:
    """``(name-seed<k>, spec)``: ``TABED_ZOO[name]`` with training seed ``k`` (``k = 0``: the model itself); the
    seed moves both the initialisation and the batch order (``train_model``)."""
    spec = TABED_ZOO[name]
    return (name, spec) if k == 0 else (f"{name}-seed{k}", {**spec, "seed": spec["seed"] + SEED_STEP * k})


def data_style(data: dict) -> str:
    """The answer style a data file was built with (``dialogues.ANSWER_STYLES``; files without one: ``short``)."""
    return data.get("meta", {}).get("style", "short")


def llava_config(name: str, spec: dict | None = None):
    """The ``LlavaConfig`` of a ``TABED_ZOO`` model (or of ``spec``, a dict shaped like its entries)."""
    from transformers import CLIPVisionConfig, LlavaConfig

    spec = spec or TABED_ZOO[name]
    text = zoo.llama_config(spec["text"])
    vision = CLIPVisionConfig(**spec["vision"])
    return LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=IMAGE_TOKEN_ID,
        image_seq_length=(vision.image_size // vision.patch_size) ** 2,  # IMAGE_TOKENS at the zoo's 16-px patches
        projector_hidden_act="gelu",
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        tie_word_embeddings=True,
    )


# ----------------------------------------------------------------------------------------------- train step
def _token_losses(model, batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-position cross-entropy, correctness of the argmax, and the loss mask (answer tokens), ``[B, L-1]``.

    The LM head runs only at the answer positions (the loss covers nothing else): with a 4096-entry vocabulary
    and a tiny text model, logits and their softmax at every position were most of a training step on a CPU.
    Same loss as the head at every position; positions outside the mask get loss 0 and ``correct`` False."""
    labels = batch["labels"][:, 1:]
    mask = labels != -100
    hidden = model.model(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], pixel_values=batch["pixel_values"]
    ).last_hidden_state[:, :-1]
    logits = model.lm_head(hidden[mask]).float()  # [N answer tokens, V]
    wanted = labels[mask]
    loss = torch.zeros(labels.shape, dtype=logits.dtype, device=logits.device)
    loss[mask] = torch.nn.functional.cross_entropy(logits, wanted, reduction="none")
    correct = torch.zeros_like(mask)
    correct[mask] = logits.argmax(-1) == wanted
    return loss, correct, mask


@torch.no_grad()
def evaluate(
    model,
    split: Split,
    images: Images,
    batch_size: int = 64,
    blank: bool = False,
    per_scenario: bool = True,
    rows: torch.Tensor | None = None,
    groups: dict | None = None,
) -> dict:
    """Mean answer-token loss and greedy token accuracy (teacher forced), overall (``all``: the ``rows``, default
    every row), per ``scenario-tN`` and per ``groups`` (``{name: [bool per row]}``); ``tokens`` counts them."""
    model.eval()
    rows = torch.arange(len(split.scenario)) if rows is None else rows
    sums: dict[str, list[float]] = {}
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        loss, correct, mask = _token_losses(model, batch_inputs(split, images, chunk, blank))
        for k, r in enumerate(chunk.tolist()):
            keys = ["all"] + ([split.scenario[r]] if per_scenario else [])
            keys += [g for g, member in (groups or {}).items() if member[r]]
            vals = (float(loss[k][mask[k]].sum()), float(correct[k].sum()), float(mask[k].sum()))
            for key in keys:
                acc = sums.setdefault(key, [0.0, 0.0, 0.0])
                for j in range(3):
                    acc[j] += vals[j]
    return {
        k: {"loss": round(v[0] / v[2], 4), "token_acc": round(v[1] / v[2], 4), "tokens": int(v[2])}
        for k, v in sums.items()
    }


def train_settings(name: str, spec: dict | None = None, **overrides) -> dict:
    """``TABED_ZOO[name]["train"]`` (or ``spec["train"]``) with the non-``None`` ``overrides`` (steps, batch_size,
    lr, weight_decay)."""
    spec = spec or TABED_ZOO[name]
    return {**TABED_TRAIN, **spec.get("train", {}), **{k: v for k, v in overrides.items() if v is not None}}


def train_model(
    name: str,
    data: dict,
    steps: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    weight_decay: float | None = None,
    device: str = "cpu",
    log_every: int | None = None,
    splits=None,
    scenarios=None,
    spec: dict | None = None,
):
    """Train one ``TABED_ZOO`` model (or a model described by ``spec``, shaped like a ``TABED_ZOO`` entry) from scratch
    with ``specdec.zoo.training.train``; returns ``(model, log rows)``.

    Settings default to ``train_settings(name)``. ``scenarios``: train (and log held-out losses) only on rows of
    these ``scenario-tN`` keys or scenario names (for quick checks). Batches (``batch_size`` rows drawn with
    replacement) come from a CPU generator seeded ``seed + 1``, so the data order does not depend on ``device``; the
    loss is the mean over the batch's answer tokens; log rows show the mean training loss since the previous row
    and the learning rate."""
    from transformers import LlavaForConditionalGeneration

    spec = spec or TABED_ZOO[name]
    cfg = train_settings(name, spec, steps=steps, batch_size=batch_size, lr=lr, weight_decay=weight_decay)
    steps, batch_size = cfg["steps"], cfg["batch_size"]
    log_every = log_every or max(1, steps // 20)
    train, heldout, images = splits or spec_splits(data, spec, device)
    allowed = torch.nonzero(_select(train, spec["max_images"], scenarios)).squeeze(1)
    held_rows = torch.nonzero(_select(heldout, spec["max_images"], scenarios, held_out=True)).squeeze(1)
    torch.manual_seed(spec["seed"])
    model = LlavaForConditionalGeneration(llava_config(name, spec)).to(device)

    def loss_fn(m, rows):
        return training.answer_loss(m, batch_inputs(train, images, rows), answer_positions_only=True)

    def heldout_losses(m):
        real = evaluate(m, heldout, images, per_scenario=False, rows=held_rows)["all"]["loss"]
        blank = evaluate(m, heldout, images, per_scenario=False, rows=held_rows, blank=True)["all"]["loss"]
        return {"heldout_in_distribution_loss": real, "heldout_blank_images_loss": blank}

    log = training.train(
        model,
        lambda g: allowed[torch.randint(len(allowed), (batch_size,), generator=g)],
        loss_fn,
        steps=steps,
        lr=cfg["lr"],
        seed=spec["seed"] + 1,
        weight_decay=cfg["weight_decay"],
        log_every=log_every,
        evaluate=heldout_losses if len(held_rows) else None,
        mean_loss=True,
        log_lr=True,
        name=name,
    )
    return model, log.rows


def _select(split: Split, max_images: int, scenarios=None, held_out: bool = False) -> torch.Tensor:
    """Bool per row: at most ``max_images`` images (``held_out``: ``in_distribution``) and, if given, in
    ``scenarios``."""
    keep = torch.tensor(in_distribution(split, max_images)) if held_out else split.n_images <= max_images
    if scenarios:
        wanted = set(scenarios)
        keep &= torch.tensor([sc in wanted or sc.rsplit("-t", 1)[0] in wanted for sc in split.scenario])
    return keep


def save_model(model, data: dict, path: pathlib.Path) -> None:
    """float16 weights + float32 config (``specdec.zoo.training.save_half``), generation config and processor files."""

    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = 1, 2, 0
    save_half(model, path)
    for fname, text in data["processor_files"].items():
        (path / fname).write_text(text, encoding="utf-8")


def train_all(
    data: dict,
    names,
    out_dir: pathlib.Path,
    device: str = "cpu",
    steps: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    weight_decay: float | None = None,
    scenarios=None,
    specs: dict | None = None,
) -> list[dict]:
    """Train ``names`` of ``TABED_ZOO`` (or of ``specs``, ``{name: spec}`` shaped like its entries), save each under
    ``out_dir/<name>``; returns summary rows.

    ``steps`` / ``batch_size`` / ``lr`` / ``weight_decay``: ``None`` takes each model's ``train_settings``."""
    specs = specs or TABED_ZOO

    if str(device).startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    by_rows: dict[tuple, tuple] = {}  # split_args(spec) -> its splits, built once per kind
    rows = []
    for name in names:
        spec = specs[name]
        if spec.get("style", "short") != data_style(data):
            raise ValueError(
                f"{name} trains on {spec.get('style', 'short')!r} answers, the data file has {data_style(data)!r}: "
                f"build it with `python -m specdec.vlm.train data --style {spec.get('style', 'short')}`"
            )
        kind = split_args(spec)
        if kind not in by_rows:
            by_rows[kind] = spec_splits(data, spec, device)
        splits = by_rows[kind]
        cfg = train_settings(name, spec, steps=steps, batch_size=batch_size, lr=lr, weight_decay=weight_decay)
        t0 = time.perf_counter()
        model, log = train_model(name, data, device=device, splits=splits, scenarios=scenarios, spec=spec, **cfg)
        seconds = time.perf_counter() - t0
        groups = {"in_distribution": in_distribution(splits[1], spec["max_images"])}
        heldout = evaluate(model, splits[1], splits[2], groups=groups)
        blank = evaluate(model, splits[1], splits[2], blank=True, groups=groups)
        for key, val in heldout.items():
            val["loss_blank_images"] = blank[key]["loss"]
        train_rows = torch.nonzero(_select(splits[0], spec["max_images"], scenarios)).squeeze(1)
        sample = train_rows[torch.randperm(len(train_rows), generator=torch.Generator().manual_seed(0))[:2000]]
        train_eval = evaluate(
            model,
            splits[0],
            splits[2],
            per_scenario=False,
            rows=sample,
            groups={"in_distribution": in_distribution(splits[0], spec["max_images"])},
        )
        save_model(model.cpu(), data, out_dir / name)
        text_params = sum(p.numel() for n, p in model.named_parameters() if "language_model" in n or "lm_head" in n)
        info = {
            "model": name,
            "parameters": sum(p.numel() for p in model.parameters()),
            "text_parameters": text_params,
            **cfg,
            "scenarios": scenarios,
            "max_images": spec["max_images"],
            "rows": spec.get("rows", "chat"),
            "device": device_name(device),
            "seconds": round(seconds, 1),
            "train_sample": train_eval,
            "heldout": heldout,
        }
        (out_dir / name / "training_log.json").write_text(json.dumps({"summary": info, "log": log}, indent=0) + "\n")
        rows.append(info)
        print(
            json.dumps(
                {k: v for k, v in info.items() if k != "heldout"}
                | {"heldout_all": heldout["all"], "heldout_in_distribution": heldout.get("in_distribution")}
            ),
            flush=True,
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", nargs="?", choices=["data", "train", "all"], default="all")
    parser.add_argument(
        "--data",
        type=pathlib.Path,
        default=pathlib.Path(".cache/tabed_data.pt"),
        help="the data file (read by train, written by all)",
    )
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        default=None,
        help="data: the data file to write; train: the models directory (default .cache/trained; the shipped zoo "
        "only when named: --out data/models)",
    )
    parser.add_argument("--models", nargs="*", default=None, help="default: every model of the data file's style")
    parser.add_argument("--style", choices=ANSWER_STYLES, default="short", help="data: the first turns' answers")
    parser.add_argument(
        "--seeds", nargs="*", type=cli.NAT, default=[0], help="train: training seeds (k > 0 saves <name>-seed<k>)"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=cli.POS, default=None, help="default: per model (TABED_ZOO[name]['train'])")
    parser.add_argument("--batch-size", type=cli.POS, default=None, help="default: per model")
    parser.add_argument("--lr", type=cli.POS_NUMBER, default=None, help="default: per model")
    parser.add_argument("--weight-decay", type=cli.finite_number(minimum=0.0), default=None, help="default: per model")
    parser.add_argument(
        "--scenarios",
        nargs="*",
        default=None,
        help="train only on these scenario names or scenario-tN keys (quick checks)",
    )
    parser.add_argument(
        "--per-scenario", type=cli.POS, default=DATA["train_per_scenario"], help="training rows per (scenario, turn)"
    )
    parser.add_argument("--heldout-per-scenario", type=cli.POS, default=DATA["heldout_per_scenario"])
    parser.add_argument("--threads", type=cli.NAT, default=0)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    data_path = args.out if args.step == "data" and args.out else args.data
    if args.step in ("data", "all"):
        data = build_data(args.per_scenario, args.heldout_per_scenario, style=args.style)
        data_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data, data_path)
        print(
            {
                "file": str(data_path),
                "bytes": data_path.stat().st_size,
                "images": int(data["n_images"]),
                **{
                    s: {"rows": len(data[s]["scenario"]), "tokens": len(data[s]["input_ids"])}
                    for s in ("train", "heldout")
                },
            }
        )
    if args.step == "train" and not data_path.exists():
        parser.error(f"no data file {data_path}: build it first (python -m specdec.vlm.train data --out {data_path})")
    if args.step in ("train", "all"):
        data = torch.load(data_path, weights_only=True)
        out = cli.output_dir(args.out)
        names = args.models or [n for n, spec in TABED_ZOO.items() if spec.get("style", "short") == data_style(data)]
        unknown = sorted(set(names) - set(TABED_ZOO))
        if unknown:
            parser.error(f"unknown models {unknown}; TABED_ZOO has {sorted(TABED_ZOO)}")
        specs = dict(seeded(n, k) for k in args.seeds for n in names)
        train_all(
            data,
            list(specs),
            out,
            device=args.device,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            weight_decay=args.weight_decay,
            scenarios=args.scenarios,
            specs=specs,
        )


if __name__ == "__main__":
    main()
