"""The tiny LLaVA zoo's data file as training batches: splits of padded rows, the image table, model inputs.

``splits_of`` / ``load_splits`` read a data file (``specdec.vlm.data.build_data``) onto a device as ``Split`` s
(padded ids, lengths, prompt lengths, each row's images) and one ``Images`` store (palette-index images ->
normalised ``pixel_values``); ``batch_inputs`` makes the model inputs and answer-only labels of some rows. The
zoo's training (``specdec.vlm.train``) and the zoos built on the same data (``specdec.aasd``) train from them.
"""

from __future__ import annotations

import torch

from specdec.vlm.data import IMAGE_TOKEN_ID, IMAGE_TOKENS, decompress_images, processor_normalisation, unpack_images
from specdec.vlm.llava import image_runs


class Split:
    """One split of the data file on ``device``: padded ids, lengths, prompt lengths, image table.

    ``text_only_above``: rows with more images than this enter in their text-only form, each image's run of
    ``IMAGE_TOKENS`` replaced by ``newline`` (the ids of ``"\\n"``, what the text-only drafting row T does), with no
    images (``text_only`` marks them). Images sit in the prompt, so the prompt length moves with the row's."""

    def __init__(self, split: dict, device, text_only_above: int | None = None, newline=()):
        offsets, img_off = split["offsets"].tolist(), split["image_offsets"]
        self.n_images = img_off[1:] - img_off[:-1]
        above = text_only_above if text_only_above is not None else int(self.n_images.max())  # None: no row
        self.text_only = self.n_images > above
        flat = split["input_ids"].tolist()
        rows = [flat[offsets[i] : offsets[i + 1]] for i in range(len(self.n_images))]
        shifts = torch.zeros(len(rows), dtype=torch.long)
        for i in self.text_only.nonzero().flatten().tolist():
            text = _replace_images(rows[i], list(newline))
            rows[i], shifts[i] = text, len(text) - len(rows[i])
        table = torch.full((len(rows), max(1, int(self.n_images.max()))), -1, dtype=torch.long)
        for i in (~self.text_only).nonzero().flatten().tolist():
            table[i, : self.n_images[i]] = split["image_ids"][img_off[i] : img_off[i + 1]].long()
        self.n_images = self.n_images.masked_fill(self.text_only, 0)
        lengths = torch.tensor([len(r) for r in rows])
        ids = torch.zeros(len(rows), int(lengths.max()), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
        self.lengths_cpu = lengths
        self.ids, self.lengths = ids.to(device), lengths.to(device)
        self.prompt_len = (split["prompt_len"].long() + shifts).to(device)
        self.table = table.to(device)
        self.scenario = [f"{s}-t{int(t)}" for s, t in zip(split["scenario"], split["turn"])]


def _replace_images(row: list[int], replacement: list[int]) -> list[int]:
    """``row`` with each image (its ``IMAGE_TOKENS`` image tokens, found as the drafting rows find them:
    ``vlm.llava.image_runs``) replaced by ``replacement``; ``ValueError`` for a run that is not a whole number of
    images."""
    out, previous = [], 0
    for start in image_runs(torch.tensor(row), IMAGE_TOKEN_ID, IMAGE_TOKENS):
        out += row[previous:start] + replacement
        previous = start + IMAGE_TOKENS
    return out + row[previous:]


def newline_ids(data: dict) -> list[int]:
    """The ids of ``"\\n"`` under the data file's tokenizer (what the text-only row T puts for an image)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_str(data["processor_files"]["tokenizer.json"]).encode("\n", add_special_tokens=False).ids


class Images:
    """Palette-index images on ``device`` -> ``pixel_values`` normalised as the saved image processor does."""

    def __init__(self, data: dict, device):
        self.indices = unpack_images(decompress_images(data), data["image_size"]).to(device)
        rgb = data["palette"].float() / 255.0
        mean, std = (torch.tensor(v) for v in processor_normalisation(data))
        self.palette = ((rgb - mean) / std).to(device)  # [K, 3]
        self.blank = 0  # palette index of white

    def pixels(self, image_ids: torch.Tensor, blank: bool = False) -> torch.Tensor:
        idx = self.indices[image_ids].long()
        if blank:
            idx = torch.full_like(idx, self.blank)
        return self.palette[idx].permute(0, 3, 1, 2).contiguous()  # [n, 3, H, W]


def splits_of(
    data: dict, rows: str = "chat", device="cpu", text_only_above: int | None = None
) -> tuple[Split, Split, Images]:
    """``(train, held-out, images)`` of the data file for ``rows``: ``"chat"`` (the scenario rows) or
    ``"caption"`` (the captioner's rows; ``ValueError`` for a data file built before they existed). Training rows
    with more than ``text_only_above`` images enter in their text-only form (``Split``); the held-out rows keep
    their images (the training log scores a model on the requests as they are)."""
    prefix = {"chat": "", "caption": "caption_"}[rows]
    if f"{prefix}train" not in data:
        raise ValueError("the data file has no caption rows: rebuild it with `python -m specdec.vlm.train data`")
    newline = newline_ids(data) if text_only_above is not None else ()
    return (
        Split(data[f"{prefix}train"], device, text_only_above, newline),
        Split(data[f"{prefix}heldout"], device),
        Images(data, device),
    )


def split_args(spec: dict) -> tuple[str, int | None]:
    """``(rows, text_only_above)`` of ``splits_of`` for a ``TABED_ZOO``-shaped ``spec``: its rows, and with
    ``text_rows`` its training rows with more than ``max_images`` images in their text-only form."""
    return spec.get("rows", "chat"), spec["max_images"] if spec.get("text_rows") else None


def spec_splits(data: dict, spec: dict, device="cpu") -> tuple[Split, Split, Images]:
    """``splits_of`` as ``spec`` trains on it (``split_args``)."""
    rows, text_only_above = split_args(spec)
    return splits_of(data, rows, device, text_only_above)


def load_splits(data: dict, device="cpu") -> tuple:
    """``(train, heldout, images)`` of a data file on ``device``: what ``vlm.train.train_model`` reads
    (``batch_inputs`` takes them; other zoos built on this data, e.g. ``specdec.aasd``, train from them)."""
    return Split(data["train"], device), Split(data["heldout"], device), Images(data, device)


def batch_inputs(split: Split, images: Images, rows: torch.Tensor, blank: bool = False) -> dict:
    """``input_ids``, ``attention_mask``, ``pixel_values``, ``labels`` (answer tokens; -100 elsewhere) of ``rows``
    (CPU LongTensor of example indices of ``split``, from ``load_splits``)."""
    length = int(split.lengths_cpu[rows].max())
    rows_d = rows.to(split.ids.device)
    ids = split.ids[rows_d, :length]
    pos = torch.arange(length, device=ids.device)
    mask = pos[None] < split.lengths[rows_d, None]
    labels = ids.masked_fill(~mask | (pos[None] < split.prompt_len[rows_d, None]), -100)
    table = split.table[rows_d]
    image_ids = table[table >= 0]  # row-major: the order of the image tokens in the batch
    pixel_values = images.pixels(image_ids, blank) if image_ids.numel() else None
    return {"input_ids": ids, "attention_mask": mask.long(), "pixel_values": pixel_values, "labels": labels}


def in_distribution(split: Split, max_images: int) -> list[bool]:
    """Rows a model can be expected to get right: not ``nq`` (the split puts every held-out fact out of the
    training rows) and at most ``max_images`` images (the draft never sees the five-image stories)."""
    return [not sc.startswith("nq-") and int(n) <= max_images for sc, n in zip(split.scenario, split.n_images)]
