"""Fingerprints of the tiny AASD recipe BEFORE the merge into ``specdec.aasd.recipe`` (issue 24).

Runs a three-step slice of every tiny AASD training stage through the old entry points (``aasd.train``:
``train_baselines``, ``train_modules``) on a small TABED data file (``build_data(2, 1)``: 40 training rows, 20
held out) and writes to the file named by its argument, as JSON, per training run: the sha256 of its float32 parameters after training and every
step's loss; the held-out losses of the summaries; and the targets' distilled answers. Run it with
``OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=AVX2 MKL_CBWR=AVX2`` (the test of the
merged recipe, ``tests/test_aasd_recipe.py``, asserts the same numbers under the same environment).
"""

import hashlib
import json
import pathlib
import sys
import tempfile

import torch

from specdec.zoo import training

torch.set_num_threads(1)
RECORDS: dict = {"train": {}, "answers": {}, "heldout": {}}
_train = training.train


def spy(model, *args, **kwargs):
    log = _train(model, *args, **kwargs)
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().cpu().contiguous().numpy().tobytes())
    RECORDS["train"][kwargs["name"]] = {"sha256": digest.hexdigest(), "losses": log.losses}
    return log


training.train = spy

from specdec.aasd import baselines  # noqa: E402
from specdec.aasd import train as T  # noqa: E402
from specdec.vlm.data import build_data  # noqa: E402

_distilled = baselines.distilled


def distilled(data, target, rows, max_new_tokens, eos_token_id=2):
    out = _distilled(data, target, rows, max_new_tokens, eos_token_id)
    split = baselines.split_rows(out["train"])
    name = pathlib.Path(target.name_or_path).name
    RECORDS["answers"][name] = {f"row-{r:06d}": ids[p:] for r, (ids, p, _) in zip(rows.tolist(), split)}
    return out


baselines.distilled = distilled
T.MODULE_TRAIN = dict(T.MODULE_TRAIN, steps=3, batch_size=4)
T.BASELINE_TRAIN = dict(T.BASELINE_TRAIN, steps=3, batch_size=4)
T.DISTILL_ROWS, T.DISTILL_MAX_NEW_TOKENS = 6, 16

data = build_data(2, 1)
with tempfile.TemporaryDirectory() as tmp:
    out = pathlib.Path(tmp)
    T.train_baselines(data, out)
    T.train_modules(data, out)
    for folder in sorted(out.iterdir()):
        if (folder / "training_log.json").exists():
            summary = json.loads((folder / "training_log.json").read_text())["summary"]
            if "heldout_loss" in summary:
                RECORDS["heldout"][folder.name] = summary["heldout_loss"]
        if (folder / "module.safetensors").exists():
            RECORDS["heldout"][folder.name] = json.loads((folder / "config.json").read_text())["summary"]["heldout_loss"]
pathlib.Path(sys.argv[1]).write_text(json.dumps(RECORDS, indent=1) + "\n")
