"""A2's 64-position proxy: the widened data file (``vlm.data.with_patch_size``) and the ``p8`` step of the recipe."""

from __future__ import annotations

import functools

import pytest
import torch


@functools.cache
def small_data() -> dict:
    from specdec.vlm.data import build_data

    torch.set_num_threads(1)
    return build_data(2, 1)


def rows_of(split: dict) -> list[torch.Tensor]:
    offsets = split["offsets"].tolist()
    return [split["input_ids"][offsets[i] : offsets[i + 1]].long() for i in range(len(offsets) - 1)]


def test_widening_keeps_the_text_and_gives_each_image_64_positions():
    from specdec.vlm.data import IMAGE_TOKEN_ID, with_patch_size

    data = small_data()
    wide = with_patch_size(data, 8)
    assert wide["image_tokens"] == 64 and '"patch_size": 8' in wide["processor_files"]["processor_config.json"]
    for name in ("train", "heldout"):
        narrow_rows, wide_rows = rows_of(data[name]), rows_of(wide[name])
        assert len(narrow_rows) == len(wide_rows)
        n_images = data[name]["image_offsets"].diff()
        for i, (a, b) in enumerate(zip(narrow_rows, wide_rows)):
            assert int((b == IMAGE_TOKEN_ID).sum()) == 64 * int(n_images[i]) == 4 * int((a == IMAGE_TOKEN_ID).sum())
            assert torch.equal(a[a != IMAGE_TOKEN_ID], b[b != IMAGE_TOKEN_ID])  # the text, in order
            p, q = int(data[name]["prompt_len"][i]), int(wide[name]["prompt_len"][i])
            assert torch.equal(a[p:], b[q:])  # the answer starts where it did
            assert torch.equal(a[:p][a[:p] != IMAGE_TOKEN_ID], b[:q][b[:q] != IMAGE_TOKEN_ID])
    with pytest.raises(ValueError, match="not a multiple"):
        with_patch_size(data, 12)


def test_the_widened_processor_encodes_prompts_as_the_widened_rows(tmp_path):
    """The saved processor of a widened file expands an image to the rows' 64 positions (what notebook 41's
    requests to ``aasd-target-p8`` are encoded by)."""
    from transformers import LlavaProcessor

    from specdec.vlm import scenes
    from specdec.vlm.data import IMAGE_TOKEN_ID, with_patch_size

    wide = with_patch_size(small_data(), 8)
    for fname, text in wide["processor_files"].items():
        (tmp_path / fname).write_text(text)
    processor = LlavaProcessor.from_pretrained(tmp_path)
    white = __import__("PIL.Image").Image.new("RGB", (scenes.IMAGE_SIZE, scenes.IMAGE_SIZE), "white")
    ids = processor(text="a -------+ b", images=[white], return_tensors="pt")["input_ids"][0]
    assert int((ids == IMAGE_TOKEN_ID).sum()) == 64


# Marked slow (make test-all): the recipe's GPU steps end to end (about 50 s of make test's 15 minutes on two cores,
# most of it building and saving a dozen models); the widened data and processor are tested above, the projected
# module in test_aasd.py.
@pytest.mark.slow
def test_the_p8_and_seeds_steps_train_a_64_position_target_and_every_module_again(tmp_path, monkeypatch):
    """``p8``: a target with 64 positions per image and its modules at k = 7. ``seeds``: training seed k of the main
    module of every target and the ablation target's variants, named ``-seed<k>``, their module seeds moved by
    ``SEED_STEP * k`` (the same rows, so the weights differ only by the seed)."""
    import json

    from specdec import zoo
    from specdec.aasd import train as aasd_train
    from specdec.aasd import zoo_specs
    from specdec.aasd.algorithm import load_module
    from specdec.zoo import models

    spec = zoo_specs.TARGET_SPECS[zoo_specs.P8_TARGET]
    monkeypatch.setitem(zoo_specs.TARGET_SPECS, zoo_specs.P8_TARGET, {**spec, "train": {**spec["train"], "steps": 2}})
    for settings in (zoo_specs.P8, zoo_specs.TINY):
        monkeypatch.setitem(settings, "module", {**settings["module"], "steps": 1, "batch_size": 2})
    shipped = zoo.model_dir
    monkeypatch.setattr(zoo, "model_dir", lambda name: tmp_path / name if (tmp_path / name).exists() else shipped(name))
    (tmp_path / zoo_specs.P8_TARGET).mkdir()  # the p8 target resolves here from the start
    saved = aasd_train.tiny("p8", small_data(), tmp_path)
    target = saved[zoo_specs.P8_TARGET]
    assert json.loads((target / "config.json").read_text())["image_seq_length"] == 64
    assert set(saved) == {zoo_specs.P8_TARGET} | {zoo_specs.module_name(zoo_specs.P8_TARGET, v) for v in
                                                  zoo_specs.ALL_VARIANTS}  # fmt: skip
    llava, _ = models.load(target, kind="llava", device="cpu")
    module = load_module(saved[zoo_specs.module_name(zoo_specs.P8_TARGET)], llava)
    assert module.config.image_tokens == 64 and module.config.projector_k == 7

    seeded = aasd_train.seeds(small_data(), tmp_path, train_seeds=(1,))
    assert set(seeded) == {zoo_specs.module_name(t, "", 1) for t in zoo_specs.TINY["targets"]} | {
        zoo_specs.module_name(zoo_specs.P8_TARGET, v, 1) for v in zoo_specs.ALL_VARIANTS
    }
    meta = json.loads((seeded[zoo_specs.module_name("tabed-target", "", 1)] / "config.json").read_text())
    assert (
        meta["train_seed"] == 1 and meta["training"]["seed"] == zoo_specs.TINY["module"]["seed"] + zoo_specs.SEED_STEP
    )
