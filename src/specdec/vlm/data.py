"""The data step of the tiny TABED zoo (``python -m specdec.vlm.train data``): prompt encoding, the LLaVA
processor, and the rendered, tokenised training set (``build_data``; needs PIL and ``specdec.vlm.scenes``).

The image token: ``<image>`` is not in the vocabulary. Each placeholder becomes ``PATCHES_PER_IMAGE`` (16)
copies of ``IMAGE_TOKEN_ID`` = 4093, the existing token ``"-------+"`` (a BPE merge from code tables that never
occurs in scenario text; the models are trained from scratch, so its embedding is free). ``encode_prompt`` does
the expansion; the saved ``LlavaProcessor`` uses ``image_token="-------+"`` (repeats of it tokenise to repeats
of 4093), so ``processor(text=processor_text(prompt), images=...)`` gives the same ids (without ``<s>``).

Training rows: ``<s>`` + prompt ids + ids of ``" " + answer`` + ``</s>``; the loss covers the answer and ``</s>``
only. Caption rows (``caption_train`` / ``caption_heldout``, for the captioner of caption drafting C): every
distinct image of the split once, ``USER: <image>\nDescribe the image. ASSISTANT:`` (``CAPTION_QUESTION``) and
its ground-truth short caption (``scenes.render_caption``) as the answer; held-out caption rows are the test
images that no training row uses.

Images are stored as palette indices (4 bits per pixel, ``scenes.PALETTE``, zlib-compressed: the images are
mostly white) and normalised at training time exactly as the saved image processor does (rescale 1/255,
then ``(x - scenes.IMAGE_MEAN) / scenes.IMAGE_STD``, no resize at 64 x 64). That normalisation maps the white
background to 0; the CLIP mean / std used before made the background a large constant input, the vision
features collapsed to a constant during the first steps and the trained models ignored their images (see
``scenes.IMAGE_MEAN``). The train step refuses a data file whose processor uses another normalisation
(``processor_normalisation``).
"""

from __future__ import annotations

import json
import pathlib
import zlib

import torch

from specdec import zoo
from specdec.vlm import scenes

IMAGE_TOKEN_ID = 4093  # the foundation tokenizer's "-------+"
IMAGE_TOKEN_TEXT = "-------+"
IMAGE_TOKENS = scenes.PATCHES_PER_IMAGE  # 16 per 64 x 64 image
DATA = dict(train_per_scenario=1000, heldout_per_scenario=30, seed=0)
DATA_FORMAT = 2  # 2: zlib-compressed images, processor normalisation scenes.IMAGE_MEAN / IMAGE_STD
CAPTION_QUESTION = "Describe the image."  # the question a LLaVA captioner is asked (caption drafting's default)


# ------------------------------------------------------------------------------------------------- encoding
def encode_prompt(
    tokenizer, prompt: str, n_images: int | None = None, image_tokens: int = IMAGE_TOKENS, bos: bool = True
) -> torch.Tensor:
    """``<s>`` + the prompt's ids with each ``<image>`` expanded to ``image_tokens`` x ``IMAGE_TOKEN_ID``.

    The text between placeholders is tokenised piece by piece (as a tokenizer does around special tokens).
    ``n_images``: if given, the number of placeholders must equal it. Returns ``LongTensor[L]``.
    """
    pieces = prompt.split(scenes.IMAGE_PLACEHOLDER)
    if n_images is not None and len(pieces) - 1 != n_images:
        raise ValueError(f"prompt has {len(pieces) - 1} {scenes.IMAGE_PLACEHOLDER} placeholders, expected {n_images}")
    ids = [tokenizer.bos_token_id] if bos else []
    for k, piece in enumerate(pieces):
        if k:
            ids += [IMAGE_TOKEN_ID] * image_tokens
        if piece:
            ids += tokenizer(piece, add_special_tokens=False)["input_ids"]
    return torch.tensor(ids, dtype=torch.long)


def encode_example(tokenizer, prompt: str, answer: str, n_images: int | None = None) -> tuple[list[int], int]:
    """``(ids, prompt_len)``: ``<s>`` prompt, then ``" " + answer`` and ``</s>`` (the reply the loss covers)."""
    ids = encode_prompt(tokenizer, prompt, n_images).tolist()
    reply = tokenizer(" " + answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return ids + reply, len(ids)


def processor_text(prompt: str) -> str:
    """The prompt for the saved ``LlavaProcessor`` (its image token is ``IMAGE_TOKEN_TEXT``)."""
    return prompt.replace(scenes.IMAGE_PLACEHOLDER, IMAGE_TOKEN_TEXT)


def build_processor(tokenizer):
    """A ``LlavaProcessor`` (CLIP image processor for 64 x 64, no crop) around the foundation tokenizer."""
    import transformers
    from transformers import LlavaProcessor

    image_cls = getattr(transformers, "CLIPImageProcessorPil", None)
    if image_cls is None:
        from transformers import CLIPImageProcessor as image_cls
    size = {"height": scenes.IMAGE_SIZE, "width": scenes.IMAGE_SIZE}
    image_processor = image_cls(
        size=size,
        crop_size=size,
        do_resize=True,
        do_center_crop=False,
        image_mean=list(scenes.IMAGE_MEAN),
        image_std=list(scenes.IMAGE_STD),
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=scenes.PATCH_SIZE,
        vision_feature_select_strategy="default",
        image_token=IMAGE_TOKEN_TEXT,
        num_additional_image_tokens=1,
    )


# ------------------------------------------------------------------------------------------------ data step
def pack_images(indices: torch.Tensor) -> torch.Tensor:
    """``uint8[n, H*W]`` palette indices (< 16) -> ``uint8[n, H*W/2]``, two pixels per byte."""
    return (indices[:, 0::2] << 4 | indices[:, 1::2]).to(torch.uint8)


def unpack_images(packed: torch.Tensor, size: int = scenes.IMAGE_SIZE) -> torch.Tensor:
    """Inverse of ``pack_images``: ``uint8[n, size, size]`` palette indices."""
    out = torch.stack([packed >> 4, packed & 15], dim=-1)
    return out.reshape(packed.shape[0], size, size)


def compress_images(packed: torch.Tensor) -> torch.Tensor:
    """``uint8[n, H*W/2]`` -> the zlib stream of its bytes as a ``uint8`` tensor (~40x smaller: mostly white)."""
    return torch.frombuffer(bytearray(zlib.compress(packed.contiguous().numpy().tobytes(), 6)), dtype=torch.uint8)


def decompress_images(data: dict) -> torch.Tensor:
    """The packed ``uint8[n, H*W/2]`` images of a data file (format 2: ``images_zlib``; format 1: ``images``)."""
    if "images_zlib" not in data:
        return data["images"]
    raw = zlib.decompress(data["images_zlib"].numpy().tobytes())
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(int(data["n_images"]), -1)


def processor_normalisation(data: dict) -> tuple[list[float], list[float]]:
    """``(image_mean, image_std)`` of the image processor saved in the data file (what the models will see at
    inference); ``ValueError`` if it is not ``scenes.IMAGE_MEAN`` / ``IMAGE_STD`` (a data file from before the
    normalisation fix: its CLIP mean / std make the vision features collapse, so rebuild it with the data step)."""
    files = data.get("processor_files")
    if files is None:
        return list(scenes.IMAGE_MEAN), list(scenes.IMAGE_STD)
    proc = json.loads(files["processor_config.json"])["image_processor"]
    mean, std = proc["image_mean"], proc["image_std"]
    if not (
        torch.allclose(torch.tensor(mean), torch.tensor(scenes.IMAGE_MEAN))
        and torch.allclose(torch.tensor(std), torch.tensor(scenes.IMAGE_STD))
    ):
        raise ValueError(
            f"the data file's image processor normalises with mean {mean} / std {std}, not "
            f"scenes.IMAGE_MEAN {scenes.IMAGE_MEAN} / IMAGE_STD {scenes.IMAGE_STD}: rebuild it with "
            "`python -m specdec.vlm.train data --out <file>`"
        )
    return mean, std


def build_data(
    train_per_scenario: int = DATA["train_per_scenario"],
    heldout_per_scenario: int = DATA["heldout_per_scenario"],
    seed: int = DATA["seed"],
    tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR,
    scenarios=None,
    style: str = "short",
) -> dict:
    """Render and tokenise ``scenes.scenario_suite`` rows (train split for training, test split held out;
    ``scenarios``: only these, as ``scenario_suite`` takes them, for tests; ``style``: the first turns' answers,
    ``dialogues.ANSWER_STYLES``, recorded in ``meta``)."""
    import tempfile

    import numpy
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    image_rows: list = []
    image_index: dict[str, int] = {}
    image_captions: list[str] = []

    def split_tensors(rows):
        ids, offsets, prompt_len, image_ids, image_offsets = [], [0], [], [], [0]
        for row in rows:
            row_ids, n_prompt = encode_example(tokenizer, row["prompt"], row["answer"], len(row["images"]))
            ids += row_ids
            offsets.append(len(ids))
            prompt_len.append(n_prompt)
            for image, caption in zip(row["images"], row["caption"]):
                key = scenes.image_key(image)
                if key not in image_index:
                    image_index[key] = len(image_rows)
                    image_rows.append(scenes.palette_indices(image))
                    image_captions.append(caption)
                image_ids.append(image_index[key])
            image_offsets.append(len(image_ids))
        return {
            "input_ids": torch.tensor(ids, dtype=torch.int16),
            "offsets": torch.tensor(offsets),
            "prompt_len": torch.tensor(prompt_len, dtype=torch.int32),
            "image_ids": torch.tensor(image_ids, dtype=torch.int32),
            "image_offsets": torch.tensor(image_offsets),
            "scenario": [r["scenario"] for r in rows],
            "turn": torch.tensor([r["turn"] for r in rows], dtype=torch.int8),
        }

    data = {
        "format": DATA_FORMAT,
        "image_size": scenes.IMAGE_SIZE,
        "image_token_id": IMAGE_TOKEN_ID,
        "image_tokens": IMAGE_TOKENS,
        "train": split_tensors(scenes.scenario_suite("train", train_per_scenario, seed, scenarios, style)),
        "heldout": split_tensors(scenes.scenario_suite("test", heldout_per_scenario, seed, scenarios, style)),
    }
    train_images = sorted(set(data["train"]["image_ids"].tolist()))
    test_images = sorted(set(data["heldout"]["image_ids"].tolist()) - set(train_images))
    data["caption_train"] = caption_split(tokenizer, train_images, image_captions)
    data["caption_heldout"] = caption_split(tokenizer, test_images, image_captions)
    indices = torch.from_numpy(numpy.stack(image_rows))
    data["images_zlib"] = compress_images(pack_images(indices))
    data["n_images"] = len(image_rows)
    data["palette"] = torch.tensor(list(scenes.PALETTE.values()), dtype=torch.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        build_processor(tokenizer).save_pretrained(tmp)
        data["processor_files"] = {p.name: p.read_text(encoding="utf-8") for p in sorted(pathlib.Path(tmp).iterdir())}
    data["meta"] = {
        "train_per_scenario": train_per_scenario,
        "heldout_per_scenario": heldout_per_scenario,
        "style": style,
        "seed": seed,
        "scenarios": [list(s) for s in scenes.SCENARIOS],
    }
    return data


def caption_split(tokenizer, image_ids: list[int], captions: list[str]) -> dict:
    """A split of caption rows in the layout of ``build_data``'s splits (scenario ``caption``, turn 1): one row
    per image id, ``USER: <image>\nDescribe the image. ASSISTANT:`` answered by ``captions[image id]``."""
    prompt = scenes.chat_prompt([(f"{scenes.IMAGE_PLACEHOLDER}\n{CAPTION_QUESTION}", None)])
    ids, offsets, prompt_len = [], [0], []
    for image in image_ids:
        row_ids, n_prompt = encode_example(tokenizer, prompt, captions[image], 1)
        ids += row_ids
        offsets.append(len(ids))
        prompt_len.append(n_prompt)
    return {
        "input_ids": torch.tensor(ids, dtype=torch.int16),
        "offsets": torch.tensor(offsets),
        "prompt_len": torch.tensor(prompt_len, dtype=torch.int32),
        "image_ids": torch.tensor(image_ids, dtype=torch.int32),
        "image_offsets": torch.arange(len(image_ids) + 1),
        "scenario": ["caption"] * len(image_ids),
        "turn": torch.ones(len(image_ids), dtype=torch.int8),
    }


def with_patch_size(data: dict, patch_size: int) -> dict:
    """``data`` (a data file of ``build_data``) for a vision tower with ``patch_size``-pixel patches: the same rows,
    images and split, each image's run of ``data["image_tokens"]`` image tokens widened to ``(image_size //
    patch_size) ** 2`` and the saved processor's ``patch_size`` set, so that encoding a prompt with the saved
    processor gives the rows' ids. The caption splits are left out (no captioner trains at another patch size)."""
    old = int(data.get("image_tokens", IMAGE_TOKENS))
    new = (int(data["image_size"]) // patch_size) ** 2
    if new < old or new % old:
        raise ValueError(f"patch size {patch_size} gives {new} positions per image, not a multiple of {old}")

    def widen(split: dict) -> dict:
        offsets, flat = split["offsets"].tolist(), split["input_ids"].long()
        ids, out_offsets, prompt_len = [], [0], []
        for i in range(len(offsets) - 1):
            row = flat[offsets[i] : offsets[i + 1]]
            is_image = row == IMAGE_TOKEN_ID
            if int(is_image.sum()) % old:
                raise ValueError(f"row {i}: {int(is_image.sum())} image tokens, not a whole number of images")
            # each image token of the old run stands for new // old of the new one; the runs stay contiguous
            repeats = torch.where(is_image, new // old, 1)
            wide = torch.repeat_interleave(row, repeats)
            prompt_len.append(int(repeats[: int(split["prompt_len"][i])].sum()))
            ids.append(wide)
            out_offsets.append(out_offsets[-1] + len(wide))
        return {
            **split,
            "input_ids": torch.cat(ids).to(split["input_ids"].dtype),
            "offsets": torch.tensor(out_offsets),
            "prompt_len": torch.tensor(prompt_len, dtype=split["prompt_len"].dtype),
        }

    config = json.loads(data["processor_files"]["processor_config.json"])
    config["patch_size"] = patch_size
    files = {**data["processor_files"], "processor_config.json": json.dumps(config, indent=2, sort_keys=True) + "\n"}
    out = {k: v for k, v in data.items() if not k.startswith("caption_")}
    return {**out, "train": widen(data["train"]), "heldout": widen(data["heldout"]), "image_tokens": new,
            "processor_files": files}  # fmt: skip
