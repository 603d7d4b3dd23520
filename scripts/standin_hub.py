"""Build a stand-in Hugging Face cache for the paper profile: every model and dataset id of ``paper.yaml``, tiny.

For each model id: a random-weight model of the same architecture class (Llama, LLaVA with its processor and
``<image>`` token, LLaVA-NeXT with its any-resolution processor, Qwen2, OPT) and a tokenizer of the same class
with the same special tokens and chat template (vocabularies of a few hundred entries, trained here with
``tokenizers``; models that share a vocabulary on the hub share one here). For each dataset id: a few rows with
the real schema (configs, splits, columns). Both are written in the layout the hub client leaves behind, under
``$HF_HOME``:

- models: ``hub/models--org--name/snapshots/<revision>/`` + ``refs/main`` (what ``hf download`` writes), so
  ``from_pretrained(id)`` and ``from_pretrained(id, revision=pin)`` resolve them offline (``<revision>``: the full
  commit ``paper.yaml`` pins; for an id it leaves unpinned, a fixed 40-hex name derived from the id);
- datasets: ``hub/datasets--org--name/snapshots/<revision>/<config>/<split>-*.parquet`` (what ``hf download
  --repo-type dataset`` writes) *and* the prepared Arrow cache ``datasets/org___name/<config>/0.0.0/<revision>/``
  (what ``datasets.load_dataset(id, config)`` leaves after its first online load). datasets 5.2 offline reads only
  the latter (``CachedDatasetModuleFactory``; checked by ``tests/test_standin_hub.py``).

The project's code then takes exactly the path it takes with the real hub. Usage::

    HF_HOME=.cache/standin-hub python scripts/standin_hub.py            # every id of paper.yaml
    python scripts/standin_hub.py --out /tmp/hf --only facebook/opt-125m openai/gsm8k
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys
import zlib

import torch
from datasets.utils.logging import disable_progress_bar
from transformers.utils import logging as hf_logging

from specdec import hub
from specdec.zoo.models import load_profile

# Model families: how each id is built (architecture class, tokenizer family, chat template, special tokens).
VICUNA = dict(arch="llama", vocab="llama2", pad="<unk>")
LLAMA2 = dict(arch="llama", vocab="llama2", pad=None)
LLAMA3_BASE = dict(arch="llama", vocab="llama3", eos="<|end_of_text|>", template=None)
LLAMA3_INSTRUCT = dict(arch="llama", vocab="llama3", eos="<|eot_id|>", template="llama3")
QWEN = dict(arch="qwen2", vocab="qwen2", template="qwen")
QWEN_MATH = dict(arch="qwen2", vocab="qwen2", template="qwen-math")
OPT = dict(arch="opt", vocab="opt")
LLAVA = dict(arch="llava", vocab="llava", template="llava")
LLAVA_NEXT = dict(arch="llava_next", vocab="llava", template="llava")  # any-resolution tiles (LLaVA-1.6)
FAMILY = {
    "lmsys/vicuna-7b-v1.3": VICUNA,
    "lmsys/vicuna-13b-v1.3": VICUNA,
    "lmsys/vicuna-7b-v1.5": VICUNA,
    "double7/vicuna-68m": VICUNA,
    "JackFram/llama-68m": LLAMA2,
    "Jiayi-Pan/Tiny-Vicuna-1B": VICUNA,
    "meta-llama/Llama-2-7b-hf": LLAMA2,
    "meta-llama/Llama-3.2-1B": LLAMA3_BASE,
    "meta-llama/Llama-3.1-8B-Instruct": LLAMA3_INSTRUCT,
    "Qwen/Qwen2.5-3B-Instruct": QWEN,
    "Qwen/Qwen2.5-Coder-3B-Instruct": QWEN,
    "Qwen/Qwen2.5-1.5B-Instruct": QWEN,
    "Qwen/Qwen2.5-Coder-1.5B-Instruct": QWEN,
    "Qwen/Qwen2.5-Math-1.5B-Instruct": QWEN_MATH,
    "facebook/opt-125m": OPT,
    "facebook/opt-13b": OPT,
    "llava-hf/llava-1.5-7b-hf": LLAVA,
    "llava-hf/llava-1.5-13b-hf": LLAVA,
    "mjbooo/lvlm68m": LLAVA,
    "mjbooo/lvlm160m-bf16": LLAVA,
    "mjbooo/lvlm68m-ov": LLAVA,  # the OneVision *recipe*; the authors load it as LlavaForConditionalGeneration
    "llava-hf/llava-v1.6-vicuna-7b-hf": LLAVA_NEXT,
    "llava-hf/llava-v1.6-vicuna-13b-hf": LLAVA_NEXT,
}
# Special tokens of each tokenizer family, in id order (ids differ from the hub's: the vocabularies are tiny).
SPECIALS = {
    "llama2": ["<unk>", "<s>", "</s>"],
    "llava": ["<unk>", "<s>", "</s>", "<image>", "<pad>"],
    "llama3": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    "opt": ["<s>", "<pad>", "</s>", "<unk>"],
}
TEMPLATES = {
    "llama3": (
        "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
        "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
    ),
    "qwen": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "qwen-math": "Please reason step by step, and put your final answer within \\\\boxed{}.",
    "llava": (
        "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}"
        "{% endif %}{# Render all images first #}{% for content in message['content'] | selectattr('type', "
        "'equalto', 'image') %}{{ '<image>\\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != "
        "'assistant' %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
        "{{ content['text'] + ' '}}{% endfor %}{% else %}{% for content in message['content'] | selectattr('type', "
        "'equalto', 'text') %}{% generation %}{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
    ),
}
CHATML = (
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
    "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nSYSTEM<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{%- if message.role != 'system' %}{{- '<|im_start|>' + message.role + '\\n' + "
    "message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, image_size=28)
PATCH = 14
# LLaVA-NeXT's any-resolution grid (the hub's: 336 x {672, 1008} ...), here in units of the tiny base size
GRID = [[VISION["image_size"] * a, VISION["image_size"] * b] for a, b in ((1, 2), (2, 1), (2, 2))]
VOCAB_SIZE = 400
# JParaCrawl's columns: `japanese` / `english` (what the Multilingual authors' extract_question.py reads) and the
# filter's verdicts `model1_accepted` / `model2_accepted` (its dataset card; read by public users' code).
JPARACRAWL = "Verah/JParaCrawl-Filtered-English-Japanese-Parallel-Corpus"
STANDIN_MARK = hub.STANDIN_MARK  # written into every config, so a stand-in is never mistaken for real weights


def revision_for(repo_id: str, pinned: str | None) -> str:
    """The snapshot folder name: a pinned full commit hash, else a fixed 40-hex name derived from the id (a pinned
    short revision is then a ref naming it, as the hub client records it)."""
    if pinned and len(pinned) == 40:
        return pinned
    return hashlib.sha1(f"{STANDIN_MARK}:{repo_id}".encode()).hexdigest()


def refs_for(pinned: str | None) -> tuple[str, ...]:
    return ("main",) if not pinned or len(pinned) == 40 else ("main", pinned)


# ------------------------------------------------------------------------------------------------ tokenizers
def corpus() -> list[str]:
    """Text the tiny tokenizers are trained on: English, code, and the five languages of the multilingual sets."""
    base = [
        "Question: Tom has 3 boxes of 4 pens. How many pens? Answer: 12. The answer is 12.",
        "def add(a, b):\n    return a + b\n",
        "For the following question, provide a detailed explanation of your reasoning leading to the answer.",
        "Translate German to English: Das Haus ist klein. The house is small.",
        "Le chat est sur la table. Кошка на столе. 猫在桌子上。 猫はテーブルの上にいます。",
        "Article: The quick brown fox jumps over the lazy dog. Summary: a fox jumps.",
        "USER: <image> What is in the picture? ASSISTANT: A red square and a blue circle.",
    ]
    return base * 20 + [chr(c) for c in range(32, 127)]


def build_tokenizer(vocab: str):
    """A ``tokenizers.Tokenizer`` of the family: sentencepiece-like BPE (Llama-2, LLaVA) or byte-level BPE."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if vocab == "llava":  # LLaVA-1.5's tokenizer is Llama's with <image> and <pad> appended (32000, 32001)
        tok = build_tokenizer("llama2")
        tok.add_special_tokens(SPECIALS["llava"][len(SPECIALS["llama2"]) :])
        return tok
    specials = SPECIALS[vocab]
    if vocab == "llama2":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Strip(" ", 1, 0)])
        alphabet = sorted(set("".join(corpus())) | {"▁"})
    else:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=specials, initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator(corpus(), trainer)
    return tok


def tokenizer_for(repo_id: str, raw):
    """The transformers tokenizer of ``repo_id``: the hub's class, special tokens and chat template."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    fam = FAMILY[repo_id]
    vocab = fam["vocab"]
    if vocab in ("llama2", "llava"):
        raw.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", raw.token_to_id("<s>"))]
        )
        kw = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token=fam.get("pad"))
        if vocab == "llava":
            kw.update(pad_token="<pad>", extra_special_tokens={"image_token": "<image>"})
        cls = "LlamaTokenizer"
    elif vocab == "llama3":
        bos = raw.token_to_id("<|begin_of_text|>")
        raw.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
            special_tokens=[("<|begin_of_text|>", bos)],
        )  # fmt: skip
        kw = dict(bos_token="<|begin_of_text|>", eos_token=fam["eos"])
        cls = "PreTrainedTokenizerFast"
    elif vocab == "qwen2":
        kw = dict(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None)
        cls = "Qwen2Tokenizer"
    else:  # OPT: GPT-2 BPE, "</s>" is bos, eos and unk, and is put in front of every text
        raw.post_processor = processors.TemplateProcessing(
            single="</s> $A", pair="</s> $A </s> $B", special_tokens=[("</s>", raw.token_to_id("</s>"))]
        )
        kw = dict(bos_token="</s>", eos_token="</s>", unk_token="</s>", pad_token="<pad>")
        cls = "GPT2Tokenizer"
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, **{k: v for k, v in kw.items() if v is not None})
    template = fam.get("template")
    if template in ("qwen", "qwen-math"):
        tok.chat_template = CHATML.replace("SYSTEM", TEMPLATES[template])
    elif template in TEMPLATES and vocab != "llava":  # LLaVA's template lives in the processor
        tok.chat_template = TEMPLATES[template]
    return tok, cls


# ------------------------------------------------------------------------------------------------ models
def model_for(repo_id: str, tokenizer):
    """A random-weight model of the hub id's architecture class, seeded by the id."""
    import transformers as tf

    arch = FAMILY[repo_id.split(":")[0]]["arch"]
    torch.manual_seed(zlib.crc32(repo_id.encode()))
    n = len(tokenizer)
    ids = dict(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    if arch == "llama":
        config = tf.LlamaConfig(vocab_size=n, max_position_embeddings=2048, **TEXT, **ids)
        model = tf.LlamaForCausalLM(config)
    elif arch == "qwen2":
        config = tf.Qwen2Config(vocab_size=n, max_position_embeddings=2048, tie_word_embeddings=True, **TEXT, **ids)
        model = tf.Qwen2ForCausalLM(config)
    elif arch == "opt":
        config = tf.OPTConfig(
            vocab_size=n, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
            word_embed_proj_dim=32, max_position_embeddings=2048, **ids,
        )  # fmt: skip
        model = tf.OPTForCausalLM(config)
    else:
        text = tf.LlamaConfig(vocab_size=n, max_position_embeddings=2048, **TEXT, **ids)
        vision = tf.CLIPVisionConfig(patch_size=PATCH, projection_dim=32, **VISION)
        llava = dict(
            vision_config=vision, text_config=text, image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
            image_seq_length=(VISION["image_size"] // PATCH) ** 2, vision_feature_layer=-2,
            vision_feature_select_strategy="default", pad_token_id=tokenizer.pad_token_id,
        )  # fmt: skip
        if arch == "llava_next":
            model = tf.LlavaNextForConditionalGeneration(tf.LlavaNextConfig(image_grid_pinpoints=GRID, **llava))
        else:
            model = tf.LlavaForConditionalGeneration(tf.LlavaConfig(**llava))
    model.config.standin = STANDIN_MARK
    return model.eval()


def processor_kwargs(tokenizer) -> dict:
    """What LLaVA-1.5's and LLaVA-NeXT's processors share: ``tokenizer``, ``PATCH``, the ``default`` feature
    selection (CLS dropped: ``num_additional_image_tokens=1``), the ``<image>`` token and LLaVA's chat template."""
    return dict(
        tokenizer=tokenizer,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        image_token="<image>",
        num_additional_image_tokens=1,
        chat_template=TEMPLATES["llava"],
    )


def llava_processor(tokenizer):
    """LLaVA-1.5's processor: CLIP image processor (tiny size), ``<image>`` token, chat template."""
    from transformers import CLIPImageProcessor, LlavaProcessor

    size = VISION["image_size"]
    images = CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    return LlavaProcessor(image_processor=images, **processor_kwargs(tokenizer))


def llava_next_processor(tokenizer):
    """LLaVA-NeXT's processor: any-resolution image processor (base view + tiles on ``GRID``), ``<image>`` token
    (expanded per image to its base and tile tokens), chat template."""
    from transformers import LlavaNextImageProcessor, LlavaNextProcessor

    size = VISION["image_size"]
    images = LlavaNextImageProcessor(
        size={"shortest_edge": size}, crop_size={"height": size, "width": size}, image_grid_pinpoints=GRID
    )
    return LlavaNextProcessor(image_processor=images, **processor_kwargs(tokenizer))


def write_model(hf_home: pathlib.Path, repo_id: str, revision: str | None, raw_tokenizers: dict) -> pathlib.Path:
    """``hub/models--org--name/snapshots/<rev>/`` (config, safetensors, tokenizer or processor) + ``refs/main``."""
    vocab = FAMILY[repo_id]["vocab"]
    if vocab not in raw_tokenizers:
        raw_tokenizers[vocab] = build_tokenizer(vocab).to_str()
    from tokenizers import Tokenizer

    tokenizer, cls = tokenizer_for(repo_id, Tokenizer.from_str(raw_tokenizers[vocab]))
    snapshot = hub.snapshot_dir(hf_home, repo_id, "model", revision_for(repo_id, revision), refs_for(revision))
    model = model_for(repo_id, tokenizer)
    model.save_pretrained(snapshot)
    if FAMILY[repo_id]["arch"] == "llava":
        llava_processor(tokenizer).save_pretrained(snapshot)
    elif FAMILY[repo_id]["arch"] == "llava_next":
        llava_next_processor(tokenizer).save_pretrained(snapshot)
    else:
        tokenizer.save_pretrained(snapshot)
    config_file = snapshot / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["tokenizer_class"] = cls
    config_file.write_text(json.dumps(config, indent=2))
    return snapshot


# ------------------------------------------------------------------------------------------------ datasets
def picture(seed: int):
    """A small RGB picture (a coloured square on a plain background)."""
    from PIL import Image, ImageDraw

    rng = torch.Generator().manual_seed(seed)
    colours = [tuple(int(v) for v in torch.randint(0, 256, (3,), generator=rng)) for _ in range(2)]
    image = Image.new("RGB", (48, 48), colours[0])
    ImageDraw.Draw(image).rectangle([12, 12, 36, 36], fill=colours[1])
    return image


def translation_rows(pair: str, n: int) -> dict:
    src, tgt = pair.split("-")
    text = {"de": "Das Haus ist klein.", "fr": "Le chat est sur la table.", "ru": "Кошка на столе.",
            "zh": "猫在桌子上。", "ja": "猫はテーブルの上にいます。", "en": "The house is small."}  # fmt: skip
    return {
        "translation": [{src: f"{text.get(src, 'Text')} {i}", tgt: f"{text.get(tgt, 'Text')} {i}"} for i in range(n)]
    }


def interleave_rows(n: int) -> dict:
    """LLaVA-NeXT-Interleave-Bench rows: sub_task, question with inline ``<image>``, image_0..image_4."""
    tasks = ["Spot-the-Diff", "IEdit", "MagicBrush", "PororoSV", "VIST"]
    rows = {"sample_id": [], "sub_task": [], "question": [], "answer": []} | {f"image_{k}": [] for k in range(5)}
    for i in range(n * len(tasks)):
        task = tasks[i % len(tasks)]
        k = 5 if task in ("PororoSV", "VIST") else 2
        rows["sample_id"].append(f"{task}_{i}")
        rows["sub_task"].append(task)
        rows["question"].append(" ".join(f"<image> Caption #{j + 1}: a scene." for j in range(k)))
        rows["answer"].append("a scene")
        for j in range(5):
            rows[f"image_{j}"].append(picture(100 * i + j) if j < k else None)
    return rows


def dataset_rows(dataset_id: str, config: str | None, n: int = 3):
    """``(features, rows)`` with the real schema of a paper dataset (columns the hub's dataset card lists)."""
    from datasets import ClassLabel, Features, Image, Sequence, Translation, Value

    s, img = Value("string"), Image()
    q = [f"What is shown in picture {i}?" for i in range(n)]
    if dataset_id.startswith("wmt/") or dataset_id == "IWSLT/iwslt2017":
        pair = config.removeprefix("iwslt2017-")
        return Features({"translation": Translation(languages=pair.split("-"))}), translation_rows(pair, n)
    if dataset_id == JPARACRAWL:  # one train split; its last 80 rows are the evaluation set, so 80 + n rows
        rows = translation_rows("ja-en", 80 + n)["translation"]
        return Features({"english": s, "japanese": s, "model1_accepted": Value("int64"),
                         "model2_accepted": Value("int64")}), {
            "english": [r["en"] for r in rows], "japanese": [r["ja"] for r in rows],
            "model1_accepted": [1] * len(rows), "model2_accepted": [i % 2 for i in range(len(rows))]}  # fmt: skip
    table = {
        "lmms-lab/llava-bench-in-the-wild": (
            {"question_id": s, "question": s, "image": img, "caption": s, "gpt_answer": s, "category": s,
             "image_id": s},
            {"question_id": [str(i) for i in range(n)], "question": q, "image": [picture(i) for i in range(n)],
             "caption": ["a square"] * n, "gpt_answer": ["a square"] * n, "category": ["conv"] * n,
             "image_id": [f"{i:03d}.jpg" for i in range(n)]},
        ),
        "lmms-lab/LMMs-Eval-Lite": (
            {"questionId": s, "question": s, "question_types": Sequence(s), "image": img, "docId": Value("int64"),
             "ucsf_document_id": s, "ucsf_document_page_no": s, "answers": Sequence(s), "data_split": s},
            {"questionId": [str(i) for i in range(n)], "question": q, "question_types": [["layout"]] * n,
             "image": [picture(i) for i in range(n)], "docId": list(range(n)), "ucsf_document_id": ["x"] * n,
             "ucsf_document_page_no": ["1"] * n, "answers": [["a square"]] * n, "data_split": ["val"] * n},
        ),
        "lmms-lab/POPE": (
            {"id": s, "question_id": s, "question": s, "answer": s, "image_source": s, "image": img, "category": s},
            {"id": [str(i) for i in range(n)], "question_id": [str(i) for i in range(n)],
             "question": [f"Is there a square in the image {i}?" for i in range(n)], "answer": ["yes"] * n,
             "image_source": ["coco"] * n, "image": [picture(i) for i in range(n)], "category": ["adversarial"] * n},
        ),
        "lmms-lab/COCO-Caption2017": (
            {"question_id": s, "image": img, "question": s, "answer": Sequence(s), "id": Value("int64"),
             "license": Value("int8"), "file_name": s, "coco_url": s, "height": Value("int32"),
             "width": Value("int32"), "date_captured": s},
            {"question_id": [f"{i:012d}.jpg" for i in range(n)], "image": [picture(i) for i in range(n)],
             "question": ["Provide a one-sentence caption for the provided image."] * n,
             "answer": [["a coloured square"]] * n, "id": list(range(n)), "license": [1] * n,
             "file_name": [f"{i:012d}.jpg" for i in range(n)], "coco_url": ["x"] * n, "height": [28] * n,
             "width": [28] * n, "date_captured": ["2013-11-14 16:28:13"] * n},
        ),
        "lmms-lab/ScienceQA": (
            {"image": img, "question": s, "choices": Sequence(s), "answer": Value("int8"), "hint": s, "task": s,
             "grade": s, "subject": s, "topic": s, "category": s, "skill": s, "lecture": s, "solution": s},
            {"image": [picture(i) for i in range(n)], "question": [f"Which colour is square {i}?" for i in range(n)],
             "choices": [["red", "blue"]] * n, "answer": [0] * n, "hint": [""] * n, "task": ["closed choice"] * n,
             "grade": ["grade2"] * n, "subject": ["natural science"] * n, "topic": ["colours"] * n,
             "category": ["colours"] * n, "skill": ["identify colours"] * n, "lecture": ["Colours."] * n,
             "solution": ["The square is red."] * n},
        ),
        "lmms-lab/MMVet": (
            {"question_id": s, "image": img, "question": s, "answer": s, "image_source": s, "capability": Sequence(s)},
            {"question_id": [f"v1_{i}" for i in range(n)], "image": [picture(i) for i in range(n)], "question": q,
             "answer": ["a square"] * n, "image_source": ["x"] * n, "capability": [["rec"]] * n},
        ),
        "lmms-lab/LLaVA-NeXT-Interleave-Bench": (
            {"sample_id": s, "sub_task": s, "question": s, "answer": s} | {f"image_{k}": img for k in range(5)},
            interleave_rows(n),
        ),
        "google-research-datasets/nq_open": (
            {"question": s, "answer": Sequence(s)},
            {"question": [f"who wrote book number {i}" for i in range(n)], "answer": [["someone"]] * n},
        ),
        "openai/gsm8k": (
            {"question": s, "answer": s},
            {"question": [f"Tom has {i} boxes of 4 pens. How many pens?" for i in range(n)],
             "answer": [f"{i} * 4 = {4 * i}\n#### {4 * i}" for i in range(n)]},
        ),
        "openai/openai_humaneval": (
            {"task_id": s, "prompt": s, "canonical_solution": s, "test": s, "entry_point": s},
            {"task_id": [f"HumanEval/{i}" for i in range(n)],
             "prompt": [f'def add{i}(a, b):\n    """Add two numbers."""\n' for i in range(n)],
             "canonical_solution": ["    return a + b\n"] * n,
             "test": ["def check(candidate):\n    assert candidate(1, 2) == 3\n" for _ in range(n)],
             "entry_point": [f"add{i}" for i in range(n)]},
        ),
        "cais/mmlu": (
            {"question": s, "subject": s, "choices": Sequence(s), "answer": ClassLabel(names=["A", "B", "C", "D"])},
            {"question": [f"What is {i} + 1?" for i in range(n)], "subject": ["elementary_mathematics"] * n,
             "choices": [[str(i + 1), str(i), str(i + 2), str(i + 3)] for i in range(n)], "answer": [0] * n},
        ),
        "abisee/cnn_dailymail": (
            {"article": s, "highlights": s, "id": s},
            {"article": [f"The quick brown fox number {i} jumps over the lazy dog." for i in range(n)],
             "highlights": ["A fox jumps."] * n, "id": [hashlib.sha1(str(i).encode()).hexdigest() for i in range(n)]},
        ),
    }  # fmt: skip
    features, rows = table[dataset_id]
    return Features(features), rows


def write_dataset(hf_home: pathlib.Path, dataset_id: str, config: str | None, splits: list[str], revision) -> str:
    """The hub-layout parquet files and the prepared Arrow cache of one (id, config), every split given; returns
    the config's entry of the dataset card (``README.md``: which files make which split)."""
    from datasets import Dataset, DatasetInfo, SplitDict, SplitInfo
    from datasets.arrow_writer import ArrowWriter
    from datasets.naming import camelcase_to_snakecase

    rev = revision_for(dataset_id, revision)
    name = dataset_id.split("/")[-1]
    config_dir = config or "default"
    snapshot = hub.snapshot_dir(hf_home, dataset_id, "dataset", rev)
    namespace, _, base = dataset_id.rpartition("/")
    cached = "___".join(([namespace] if namespace else []) + [camelcase_to_snakecase(base)])
    arrow_dir = hf_home / "datasets" / cached / config_dir / "0.0.0" / rev
    arrow_dir.mkdir(parents=True, exist_ok=True)
    split_dict = SplitDict(dataset_name=name)
    for split in splits:
        features, rows = dataset_rows(dataset_id, config)
        data = Dataset.from_dict(rows, features=features)
        (snapshot / config_dir).mkdir(parents=True, exist_ok=True)
        data.to_parquet(str(snapshot / config_dir / f"{split}-00000-of-00001.parquet"))
        with ArrowWriter(features=features, path=str(arrow_dir / f"{camelcase_to_snakecase(name)}-{split}.arrow")) as w:
            w.write_table(data.data.table)
            count, size = w.finalize()
        split_dict.add(SplitInfo(name=split, num_bytes=size, num_examples=count, dataset_name=name))
    info = DatasetInfo(
        features=features, config_name=config_dir, dataset_name=name, builder_name="parquet", version="0.0.0",
        splits=split_dict, description=f"{STANDIN_MARK}: a few rows with the schema of {dataset_id}",
    )  # fmt: skip
    info.write_to_directory(str(arrow_dir))
    return f"- config_name: {config_dir}\n  data_files:\n" + "".join(
        f"  - split: {s}\n    path: {config_dir}/{s}-*.parquet\n" for s in splits
    )


# ------------------------------------------------------------------------------------------------ main
def build(hf_home: pathlib.Path, only: list[str] | None = None, log=print) -> dict:
    """Write the stand-in of every model and dataset of ``paper.yaml`` (or the ids in ``only``) under ``hf_home``."""
    disable_progress_bar()
    hf_logging.disable_progress_bar()
    spec = load_profile("paper")
    revisions = spec.get("revisions") or {}
    raw_tokenizers: dict = {}
    built = {"models": [], "datasets": []}
    for repo_id in hub.profile_models(spec):
        if only and repo_id not in only:
            continue
        if repo_id not in FAMILY:
            raise KeyError(f"{repo_id}: no stand-in family known; add it to FAMILY in {__file__}")
        write_model(hf_home, repo_id, revisions.get(repo_id), raw_tokenizers)
        built["models"].append(repo_id)
        log(f"model   {repo_id}")
    by_config: dict = {}
    cards: dict = {}
    for d in hub.profile_datasets(spec):
        by_config.setdefault((d["id"], d["config"]), []).append(d["split"])
    for (dataset_id, config), splits in by_config.items():
        if only and dataset_id not in only:
            continue
        splits = sorted(set(splits) | ({"train"} if dataset_id == "openai/gsm8k" else set()))
        cards[dataset_id] = cards.get(dataset_id, "") + write_dataset(
            hf_home, dataset_id, config, splits, revisions.get(dataset_id)
        )
        built["datasets"].append(f"{dataset_id}:{config}")
        log(f"dataset {dataset_id} {config} {splits}")
    for dataset_id, entries in cards.items():
        snapshot = hub.snapshot_dir(hf_home, dataset_id, "dataset", revision_for(dataset_id, revisions.get(dataset_id)))
        (snapshot / "README.md").write_text(f"---\nconfigs:\n{entries}---\n# {STANDIN_MARK}: {dataset_id}\n")
    return built


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=None, help="HF_HOME to write (default: $HF_HOME)")
    ap.add_argument("--only", nargs="*", help="build only these model / dataset ids")
    args = ap.parse_args(argv)
    out = args.out or pathlib.Path(os.environ.get("HF_HOME", ""))
    if not str(out):
        sys.exit("set HF_HOME (make standin-hub sets it to .cache/standin-hub) or pass --out")
    built = build(out.resolve(), args.only)
    print(f"stand-in hub at {out}: {len(built['models'])} models, {len(built['datasets'])} dataset configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
