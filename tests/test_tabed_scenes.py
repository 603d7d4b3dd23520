"""Synthetic TABED scenarios (``specdec.vlm.scenes``) and the tiny LLaVA zoo's data and training
(``vlm.data``, ``vlm.batches``, ``vlm.train``)."""

import random
import re

import pytest
import torch

from specdec.vlm import batches, dialogues, scenes
from specdec.vlm import data as td
from specdec.vlm import train as tl


@pytest.fixture(scope="module")
def suites():
    return {split: scenes.scenario_suite(split, 12, seed=0) for split in ("train", "test")}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from specdec import zoo

    return AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)


def _fingerprint(rows):
    return [
        (r["id"], r["prompt"], r["answer"], r["caption"], [scenes.image_key(im) for im in r["images"]]) for r in rows
    ]


def test_deterministic_and_seeded():
    a = scenes.scenario_suite("train", 2, seed=0)
    b = scenes.scenario_suite("train", 2, seed=0)
    assert _fingerprint(a) == _fingerprint(b)
    c = scenes.scenario_suite("train", 2, seed=1)
    assert [r["prompt"] for r in a] != [r["prompt"] for r in c]
    # the first rows do not depend on n_per_scenario
    longer = scenes.scenario_suite("train", 3, seed=0, scenarios=["pope"])
    assert _fingerprint(longer[:2]) == _fingerprint([r for r in a if r["scenario"] == "pope" and r["turn"] == 1])


def test_every_scenario_and_turn(suites):
    for split, rows in suites.items():
        got = {(r["scenario"], r["turn"]) for r in rows}
        assert got == set(scenes.SCENARIOS)
        assert len(rows) == 12 * len(scenes.SCENARIOS)
        assert len({r["id"] for r in rows}) == len(rows)
        assert all(r["split"] == split for r in rows)


def test_disjoint_splits(suites):
    def keys(rows):
        return {(r["scenario"], scenes.canonical(r["gt"])) for r in rows}

    def items(rows):
        return {(kind, scenes.canonical(gt)) for r in rows for kind, gt in r["items"]}

    def images(rows):  # story frames have their own style and are split by story
        return {scenes.image_key(im) for r in rows for im in r["images"] if r["scenario"] not in ("psv", "vist")}

    train, test = suites["train"], suites["test"]
    assert not keys(train) & keys(test)
    assert not items(train) & items(test)
    assert not images(train) & images(test)
    for split, rows in suites.items():
        assert all(scenes.split_of(kind, gt) == split for r in rows for kind, gt in r["items"])


def test_rows_are_well_formed(suites):
    for row in suites["train"] + suites["test"]:
        n = len(row["images"])
        assert row["prompt"].count(scenes.IMAGE_PLACEHOLDER) == n
        assert len(row["caption"]) == n and row["caption"] == scenes.render_caption(row["images"])
        assert row["prompt"].startswith(scenes.USER) and row["prompt"].endswith(scenes.ASSISTANT)
        assert row["prompt"].count(scenes.TURN_END) == row["turn"] - 1
        assert row["answer"].endswith(".") and (row["answer"][0].isupper() or row["answer"][0].isdigit())
        for image in row["images"]:
            assert image.size == (scenes.IMAGE_SIZE, scenes.IMAGE_SIZE) and image.mode == "RGB"
        expected = {"psv": 5, "vist": 5, "iedit": 2, "magicbrush": 2, "spot": 2}.get(row["scenario"])
        if expected is None:
            expected = 0 if row["scenario"] in ("nq", "gsm8k") and row["turn"] == 1 else 1
        assert n == expected, row["id"]
    five = [r for r in suites["test"] if len(r["images"]) == 5]
    assert {r["scenario"] for r in five} == {"psv", "vist"}


def _number(text):
    words = {w: i for i, w in enumerate(scenes.NUMBER_WORDS)}
    return words.get(text, int(text) if text.isdigit() else None)


def test_answers_follow_ground_truth(suites):
    rows = suites["train"] + suites["test"]
    for row in rows:
        gt, ans = row["gt"], row["answer"]
        if row["turn"] == 1 and row["scenario"] == "describe" and "scene" in gt:
            m = re.match(r"There (?:are|is) (\w+) shapes?:", ans)
            assert _number(m.group(1)) == len(gt["scene"]["shapes"])
            for shape, color, pos in gt["scene"]["shapes"]:
                assert f"{color} {shape}" in ans and scenes.AT[pos] in ans
        if row["turn"] == 1 and row["scenario"] == "pope":
            present = any((s, c) == (gt["shape"], gt["color"]) for s, c, _ in gt["scene"]["shapes"])
            assert present == gt["yes"] == ans.startswith("Yes")
        if row["turn"] == 1 and row["scenario"] == "mmvet" and gt.get("task") == "count":
            m = re.match(r"There (?:are|is) (\w+) shapes? in the image\.", ans)
            assert _number(m.group(1)) == len(gt["scene"]["shapes"])
        if row["turn"] == 1 and row["scenario"] == "docvqa":
            assert ans.endswith(gt["document"]["lines"][scenes.LINES.index(gt["line"])] + ".")
        if row["scenario"] == "gsm8k":
            assert ans.endswith(f"The answer is {gt['problem']['result']}.")
        if row["turn"] == 1 and row["scenario"] in ("iedit", "magicbrush", "spot"):
            before = {tuple(s) for s in gt["before"]["shapes"]}
            after = {tuple(s) for s in gt["after"]["shapes"]}
            kind = gt["edit"]["type"]
            assert len(before ^ after) == {"recolor": 2, "move": 2, "add": 1, "remove": 1}[kind]
            if row["scenario"] == "magicbrush":
                assert kind in ("add", "remove")
        if row["turn"] == 1 and row["scenario"] == "psv":
            assert len(re.findall(r"\.", ans)) == 5 and ans.startswith("First,") and "Finally," in ans
        if row["turn"] == 2 and row["scenario"] == "describe" and "total" in row["prompt"].rsplit("USER:", 1)[1]:
            n = len(gt["first"]["scene"]["shapes"])
            assert _number(re.search(r"(\w+) shapes? in total", ans).group(1)) == n


def test_images_use_the_palette_and_captions_are_registered(suites):
    from PIL import Image

    for row in suites["test"][:60]:
        for image in row["images"]:
            idx = scenes.palette_indices(image)
            assert idx.shape == (scenes.IMAGE_SIZE**2,) and idx.max() < len(scenes.PALETTE)
            copy = Image.frombytes("RGB", image.size, image.tobytes())  # same pixels, no info dict
            assert scenes.render_caption(copy) == scenes.render_caption(image)
    with pytest.raises(KeyError):
        scenes.render_caption(Image.new("RGB", (64, 64), (1, 2, 3)))


def test_encode_prompt_expands_images(suites, tokenizer):
    for row in suites["test"]:
        n = len(row["images"])
        ids = td.encode_prompt(tokenizer, row["prompt"], n)
        assert ids[0] == tokenizer.bos_token_id
        assert int((ids == td.IMAGE_TOKEN_ID).sum()) == n * scenes.PATCHES_PER_IMAGE
        runs = "".join("x" if i == td.IMAGE_TOKEN_ID else "." for i in ids.tolist())
        assert re.findall("x+", runs) == ["x" * scenes.PATCHES_PER_IMAGE] * n
        # the saved LlavaProcessor's tokenizer path gives the same ids (without <s>)
        plain = tokenizer(
            td.processor_text(row["prompt"]).replace(
                td.IMAGE_TOKEN_TEXT, td.IMAGE_TOKEN_TEXT * scenes.PATCHES_PER_IMAGE
            ),
            add_special_tokens=False,
        )
        assert plain["input_ids"] == ids[1:].tolist()
        full, prompt_len = td.encode_example(tokenizer, row["prompt"], row["answer"], n)
        assert full[:prompt_len] == ids.tolist() and full[-1] == tokenizer.eos_token_id
        assert td.IMAGE_TOKEN_ID not in full[prompt_len:]
    with pytest.raises(ValueError):
        td.encode_prompt(tokenizer, "USER: <image>\nHi ASSISTANT:", n_images=2)


def test_pack_roundtrip_and_pixels_match_processor(suites):
    rows = [r for r in suites["test"] if r["images"]][:8]
    images = [im for r in rows for im in r["images"]]
    import numpy as np

    idx = torch.from_numpy(np.stack([scenes.palette_indices(im) for im in images]))
    packed = td.pack_images(idx)
    assert packed.shape[1] == scenes.IMAGE_SIZE**2 // 2
    data = {
        "images_zlib": td.compress_images(packed),
        "n_images": len(images),
        "image_size": scenes.IMAGE_SIZE,
        "palette": torch.tensor(list(scenes.PALETTE.values()), dtype=torch.uint8),
    }
    assert torch.equal(td.decompress_images(data), packed)
    store = batches.Images(data, "cpu")
    assert torch.equal(td.unpack_images(packed).reshape(len(images), -1), idx)
    pixels = store.pixels(torch.arange(len(images)))
    assert torch.allclose(pixels, scenes.images_to_pixels(images), atol=1e-5)


def test_train_step_saves_and_reloads(tmp_path, tokenizer):
    from specdec.zoo.models import load

    torch.set_num_threads(1)
    data = td.build_data(train_per_scenario=1, heldout_per_scenario=1, seed=0)
    assert len(data["train"]["scenario"]) == len(scenes.SCENARIOS)
    path = tmp_path / "data.pt"
    torch.save(data, path)
    data = torch.load(path)  # weights_only load, as on the GPU box
    short = [n for n, spec in tl.TABED_ZOO.items() if spec.get("style", "short") == "short"]
    with pytest.raises(ValueError, match="--style full"):  # a model of the full style refuses a short data file
        tl.train_all(data, ["tabed-draft-long"], tmp_path / "models", device="cpu", steps=2, batch_size=2)
    rows = tl.train_all(data, short, tmp_path / "models", device="cpu", steps=2, batch_size=2)
    assert [r["model"] for r in rows] == ["tabed-target", "tabed-draft", "tabed-captioner"]
    assert [r["max_images"] for r in rows] == [5, 1, 1] and rows[2]["rows"] == "caption"
    assert rows[2]["parameters"] < rows[1]["parameters"]
    assert set(rows[2]["heldout"]) == {"all", "caption-t1", "in_distribution"}  # trained and scored on captions
    assert all(r["steps"] == 2 and r["batch_size"] == 2 for r in rows)
    assert {"loss", "loss_blank_images", "tokens"} <= set(rows[1]["heldout"]["in_distribution"])
    assert rows[1]["text_parameters"] * 5 < rows[0]["text_parameters"]
    model, processor = load(tmp_path / "models" / "tabed-draft", kind="llava")
    assert model.dtype == torch.float32 and processor.image_token_id == td.IMAGE_TOKEN_ID
    assert model.config.image_token_id == td.IMAGE_TOKEN_ID
    row = scenes.scenario_suite("test", 1, seed=0, scenarios=[("iedit", 1)])[0]
    ids = td.encode_prompt(processor.tokenizer, row["prompt"], 2)
    enc = processor(text=td.processor_text(row["prompt"]), images=row["images"], return_tensors="pt")
    assert enc["input_ids"][0].tolist() == ids[1:].tolist()
    out = model.generate(
        input_ids=ids[None],
        attention_mask=torch.ones_like(ids)[None],
        pixel_values=enc["pixel_values"],
        max_new_tokens=4,
        do_sample=False,
    )
    assert out.shape[1] == len(ids) + 4 or out[0, -1] == processor.tokenizer.eos_token_id


# ------------------------------------------------------------------------ the images must matter to the models
# Regression tests for the image-blind tabed models (held-out loss with blank images == with the real ones): the
# CLIP mean / std turned the white background into a large constant input, the vision features collapsed to a
# constant in the first ~40 training steps and the text model learnt to ignore them.
@pytest.fixture(scope="module")
def image_data():
    torch.set_num_threads(1)
    return td.build_data(
        train_per_scenario=8, heldout_per_scenario=2, seed=0, scenarios=[("describe", 1), ("mmvet", 1)]
    )


def _image_feature_spread(model, images, n):
    """Std of the projected image features across images / their overall std (0: every image looks alike)."""
    with torch.no_grad():
        feats = torch.stack(list(model.get_image_features(pixel_values=images.pixels(torch.arange(n))).pooler_output))
    return float(feats.std(0).mean() / feats.std())


def test_background_normalises_to_zero(image_data, tokenizer):
    from PIL import Image

    white = Image.new("RGB", (scenes.IMAGE_SIZE, scenes.IMAGE_SIZE), scenes.PALETTE["white"])
    assert torch.count_nonzero(scenes.images_to_pixels([white])) == 0
    processor = td.build_processor(tokenizer)  # what the saved models use at inference
    assert processor.image_processor(images=[white], return_tensors="pt")["pixel_values"].abs().max() < 1e-6
    store = batches.Images(image_data, "cpu")  # what training uses
    assert torch.count_nonzero(store.pixels(torch.arange(2), blank=True)) == 0
    # a data file whose saved processor normalises otherwise (e.g. built before the fix) is refused
    files = dict(image_data["processor_files"])
    files["processor_config.json"] = files["processor_config.json"].replace(
        '"image_mean": [\n      1.0', '"image_mean": [\n      0.48'
    )
    with pytest.raises(ValueError, match="rebuild"):
        batches.Images(dict(image_data, processor_files=files), "cpu")


def test_images_reach_the_model_and_get_gradients(image_data):
    from transformers import LlavaForConditionalGeneration

    train, images = batches.Split(image_data["train"], "cpu"), batches.Images(image_data, "cpu")
    rows = torch.arange(6)
    batch = batches.batch_inputs(train, images, rows)  # as train_model builds it
    n = int(train.n_images[rows].sum())
    assert batch["pixel_values"].shape == (n, 3, scenes.IMAGE_SIZE, scenes.IMAGE_SIZE)
    assert int((batch["input_ids"] == td.IMAGE_TOKEN_ID).sum()) == n * td.IMAGE_TOKENS
    assert batch["pixel_values"].flatten(1).std(0).mean() > 0.1  # the images differ
    blank = batches.batch_inputs(train, images, rows, blank=True)
    for name in tl.TABED_ZOO:
        torch.manual_seed(0)
        model = LlavaForConditionalGeneration(tl.llava_config(name))
        assert model.config.image_token_id == td.IMAGE_TOKEN_ID
        loss, _, mask = tl._token_losses(model, batch)
        loss[mask].mean().backward()
        for prefix in (
            "model.vision_tower.embeddings.patch_embedding",
            "model.vision_tower.encoder.layers.0.",
            f"model.vision_tower.encoder.layers.{tl.VISION['num_hidden_layers'] - 1}.",
            "model.multi_modal_projector",
        ):
            grads = [p.grad for k, p in model.named_parameters() if k.startswith(prefix)]
            assert grads and all(g is not None for g in grads) and sum(float(g.norm()) for g in grads) > 0, prefix
        model.eval()
        with torch.no_grad():
            real = model(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], pixel_values=batch["pixel_values"]
            ).logits
            white = model(
                input_ids=blank["input_ids"], attention_mask=blank["attention_mask"], pixel_values=blank["pixel_values"]
            ).logits
        assert (real - white).abs().max() > 1e-2, name


def test_the_draft_reads_multi_image_rows_as_text_only(tokenizer):
    """``text_rows``: a training row with more images than ``max_images`` enters as the text-only row T drafts
    from (each image's run -> the ids of "\\n"), with no images and the same answer; rows within ``max_images``
    keep theirs, and the held-out rows keep every image."""
    data = td.build_data(train_per_scenario=2, heldout_per_scenario=1, seed=0, scenarios=[("describe", 1), ("psv", 1)])
    spec = tl.TABED_ZOO["tabed-draft"]
    assert spec["text_rows"] and spec["max_images"] == 1 and not tl.TABED_ZOO["tabed-target"].get("text_rows")
    train, held, _ = batches.spec_splits(data, spec)
    base = batches.Split(data["train"], "cpu")
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"]
    assert batches.newline_ids(data) == newline and not base.text_only.any()
    stories = [i for i, sc in enumerate(train.scenario) if sc == "psv-t1"]
    others = [i for i in range(len(train.scenario)) if i not in stories]
    assert stories and others and train.text_only[stories].all() and not train.text_only[others].any()
    for i in stories:
        row, old = train.ids[i, : train.lengths[i]].tolist(), base.ids[i, : base.lengths[i]].tolist()
        assert td.IMAGE_TOKEN_ID not in row and int(train.n_images[i]) == 0 and (train.table[i] < 0).all()
        assert row == batches._replace_images(old, newline) and int(base.n_images[i]) == 5
        assert row[train.prompt_len[i] :] == old[base.prompt_len[i] :]  # the same answer, and only it in the loss
    for i in others:
        assert torch.equal(train.ids[i], base.ids[i][: train.ids.shape[1]])
        assert torch.equal(train.table[i], base.table[i])
    assert tl._select(train, 1)[stories].all()  # trained on
    assert int(held.n_images.max()) == 5 and not held.text_only.any()
    with pytest.raises(ValueError, match="not a multiple of the 16"):
        batches._replace_images([1, *[td.IMAGE_TOKEN_ID] * 15, 5], newline)


def test_training_keeps_image_features_apart(image_data):
    # With the CLIP mean / std the spread fell from 0.30 to 0.003 in 20 steps (and the trained models ignored the
    # images); with the white-is-zero normalisation it is ~0.17 after 20 steps and grows back as the model
    # learns to read the images.
    train, held, images = (
        batches.Split(image_data["train"], "cpu"),
        batches.Split(image_data["heldout"], "cpu"),
        batches.Images(image_data, "cpu"),
    )
    n = int(image_data["n_images"])
    model, _ = tl.train_model(
        "tabed-draft", image_data, steps=20, batch_size=8, splits=(train, held, images), log_every=1000
    )
    assert _image_feature_spread(model, images, n) > 0.03


def test_every_second_turn_says_what_its_answer_rests_on():
    from specdec.vlm import dialogues
    from specdec.vlm.groundtruth import COLORS, SHAPES

    rows = scenes.scenario_suite("test", 20, seed=0)
    assert {r["rests_on"] for r in rows if r["turn"] == 1} == {None}
    kinds = {(r["scenario"], r["rests_on"]) for r in rows if r["turn"] == 2}
    assert {k for _, k in kinds} == {dialogues.IMAGE, dialogues.PREVIOUS, dialogues.TEXT_TASK}
    assert {s for s, k in kinds if k == dialogues.TEXT_TASK} == {"nq", "gsm8k"}

    def new_words(row):  # colour and shape words of the answer that the conversation so far never wrote
        words = set(re.findall(r"[a-z]+", row["answer"].lower())) & set(COLORS + SHAPES)
        return words - set(re.findall(r"[a-z]+", row["prompt"].lower()))

    second = [r for r in rows if r["turn"] == 2]
    assert all(not new_words(r) for r in second if r["rests_on"] == dialogues.PREVIOUS)
    assert sum(bool(new_words(r)) for r in second if r["rests_on"] == dialogues.IMAGE) >= 10  # seen only there


def test_full_answers_keep_the_requests_and_answer_at_length(tokenizer):
    """The "full" style changes only the replies of the benchmark and story first turns: same prompts, images and
    ground truth (no extra draws), and replies long enough that a window of 16 blocks is shorter than the answer
    (docs/papers/tabed.md, "T2 and T5"). Text-only cells keep their answers; a second turn keeps its follow-up and
    carries the full first answer in its prompt."""
    cells = [(s, 1) for s in dialogues.FULL_ANSWERS] + [("nq", 1), ("pope", 2)]
    short = scenes.scenario_suite("test", 6, seed=3, scenarios=cells)
    full = scenes.scenario_suite("test", 6, seed=3, scenarios=cells, style="full")
    for a, b in zip(short, full):
        assert a["id"] == b["id"] and a["gt"] == b["gt"] and a["caption"] == b["caption"]
        assert [scenes.image_key(x) for x in a["images"]] == [scenes.image_key(x) for x in b["images"]]
        if b["turn"] == 1 and b["scenario"] in dialogues.FULL_ANSWERS:
            assert a["prompt"] == b["prompt"] and b["answer"].startswith(a["answer"]) and b["answer"] != a["answer"]
        elif b["turn"] == 1:
            assert (a["prompt"], a["answer"]) == (b["prompt"], b["answer"])
        else:  # the second turn's prompt carries the first turn's full answer; the follow-up is the same
            assert a["second_user"] == b["second_user"] and a["first_answer"] != b["first_answer"]
    lengths = [len(tokenizer(" " + r["answer"])["input_ids"]) for r in full if r["scenario"] in dialogues.FULL_ANSWERS]
    assert sum(lengths) / len(lengths) >= 70
    with pytest.raises(ValueError, match="answer style"):
        dialogues.first_turn("pope", random.Random(0), "test", style="long")
