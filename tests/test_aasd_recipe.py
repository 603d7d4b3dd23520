"""The one AASD recipe (``specdec.aasd.recipe``) trains the tiny zoo as the recipe that made it did.

The shipped ``data/models/aasd-*`` weights (and every committed AASD row) were trained by the tiny recipe as it
was before the merge (``aasd/train.py`` with ``baselines.py``; the paper scale was ``aasd/paper_zoo.py``).
``scripts/aasd_fingerprints_before.py`` (``git show 190003b:scripts/aasd_fingerprints_before.py``; removed with the
merge, it calls the old functions) ran a three-step slice of every stage of that recipe on a small TABED data
file (``build_data(2, 1)``: 40 training rows, 20 held out) against the shipped targets and recorded, per training
run, the sha256 of its float32 parameters and every step's loss, the held-out losses of the summaries, and the
targets' distilled answers (``BEFORE``). This test runs the same slice through the merged recipe and demands the
same numbers, bit for bit: same initialisation, same batches, same arithmetic. The baselines have since been
rebuilt in the paper's order (issue 26, A5: a text draft pretrained on the foundation corpus, FT-LLaMA finetuned
from it, FT-LLaVA on FT-LLaMA's language model, DT from FT on 2,000 target answers): their numbers
(``REBUILT_*``) are the rebuilt recipe's own, recorded when it was written; the modules' and the distilled answers
are still the numbers from before the merge.

Bitwise equality holds at one vector width: the slice runs in a subprocess at the narrowest one
(``ATEN_CPU_CAPABILITY=default``, MKL on its AVX2 path with conditional bitwise reproducibility, one thread),
the environment ``BEFORE`` was recorded in, so an AVX-512 and an AVX2 machine compute the same bits. (At the
native width of this machine the old recipe's hashes differ from these and its losses agree to 1e-5; the merged
recipe gives the old recipe's bits there too.) Checked once at full scale, not here: the 120 distilled answers
of each target on the full data file, ``aasd-module-aasd-target-s`` (100 steps on 20,000 rows) and
``aasd-dt-llama-tabed-target`` (200 steps) are the same bytes from both recipes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import platform
import subprocess
import sys

import pytest

NARROW = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "MKL_CBWR": "AVX2",
    "OMP_NUM_THREADS": "1",
}
# The fingerprints were recorded where these settings gave the same bits on every x86 CI host then seen; an AMD
# host with AVX-512 (2026-11-26) moved every weight hash and the losses by up to 4e-5 relative, so the losses and
# held-out losses are compared at LOSS_REL and the hashes all-or-none.
LOSS_REL = 2e-4
# 3 steps of 4 rows for every model; 6 prompts answered with up to 16 tokens per target
SLICE = dict(steps=3, batch_size=4)
DISTILL = dict(rows=6, max_new_tokens=16)

# scripts/aasd_fingerprints_before.py at 190003b (the recipe before the merge) in the NARROW environment:
# sha256 of the float32 parameters (first 16 hex digits) and the three training losses per run
BEFORE_TRAIN = {
    "aasd-module-tabed-target": ("f9c17768c8e3fa96", [9.40528678894043, 6.747302055358887, 6.68502950668335]),
    "aasd-module-tabed-target-noproj": ("09d2edafbf348c22", [9.576165199279785, 6.950711727142334, 6.888890743255615]),
    "aasd-module-tabed-target-k1": ("a80e8ddd0e9b02be", [9.300901412963867, 6.713888168334961, 6.6115546226501465]),
    "aasd-module-tabed-target-own": ("5af73863d46063c8", [10.232545852661133, 7.243419647216797, 5.772476673126221]),
    "aasd-module-aasd-target-s": ("98b2ed9cdfe3bbc3", [5.970522403717041, 5.0665812492370605, 4.395478248596191]),
}
# the baselines in the paper's order (issue 26, A5: pretrain, finetune, distil), recorded by this recipe in the
# NARROW environment when they were rebuilt (``python tests/test_aasd_recipe.py OUT.json``)
REBUILT_TRAIN = {
    "aasd-pt-llama": ("68fc9fade2328ab3", [8.313454627990723, 8.312597274780273, 8.300566673278809]),
    "aasd-ft-llama": ("8d5bd635ae375710", [8.242692947387695, 8.065342903137207, 8.037397384643555]),
    "aasd-ft-llava": ("cc9e039a2fa3f287", [7.95644474029541, 7.803756237030029, 7.87811803817749]),
    "aasd-dt-llava-tabed-target": ("ced888d9c383a843", [7.722020149230957, 7.66179084777832, 7.515320777893066]),
    "aasd-dt-llama-tabed-target": ("d1afa5091fdcabbd", [7.959014415740967, 7.723671913146973, 7.687177658081055]),
    "aasd-dt-llava-aasd-target-s": ("370190585d5030a4", [7.729146957397461, 8.479154586791992, 7.527896404266357]),
    "aasd-dt-llama-aasd-target-s": ("2c1cde9ab3bd5764", [7.982279300689697, 7.802682399749756, 7.692261695861816]),
}
BEFORE_HELDOUT = {
    "aasd-module-aasd-target-s": 4.5666,
    "aasd-module-tabed-target": 6.8842,
    "aasd-module-tabed-target-k1": 6.7813,
    "aasd-module-tabed-target-noproj": 7.1973,
    "aasd-module-tabed-target-own": 5.479,
}
REBUILT_HELDOUT = {
    "aasd-dt-llama-aasd-target-s": 7.8327,
    "aasd-dt-llama-tabed-target": 7.7929,
    "aasd-ft-llama": 7.9778,
    "aasd-pt-llama": 8.229,
}
BEFORE_ANSWERS = {
    "tabed-target": {
        "row-000004": [1559, 534, 14, 1271, 312, 412, 394, 706, 440, 585, 268, 70, 309, 284, 2377, 479],
        "row-000005": [1528, 14, 1271, 312, 739, 298, 78, 324, 265, 362, 2707, 309, 284, 2377, 479, 16],
        "row-000011": [1230, 1025, 284, 394, 706, 265, 362, 2707, 532, 284, 2046, 16, 2],
        "row-000014": [487, 75, 752, 14, 267, 552, 1812, 589, 440, 585, 268, 70, 312, 309, 284, 281],
        "row-000016": [520, 298, 78, 324, 304, 544, 1322, 265, 299, 1699, 3949, 447, 16, 2],
        "row-000021": [3035, 476, 735, 1013, 1765, 345, 2223, 304, 544, 67, 1138, 14, 538, 284, 2467, 90],
    },
    "aasd-target-s": {
        "row-000004": [1559, 534, 14, 1271, 312, 267, 3949, 447, 304, 544, 1322, 309, 284, 2377, 479, 16],
        "row-000005": [1559, 534, 14, 1271, 312, 267, 298, 78, 324, 265, 362, 2707, 309, 284, 2377, 479],
        "row-000011": [1230, 1025, 284, 296, 70, 304, 544, 1322, 805, 284, 298, 325, 604, 79, 1950, 16],
        "row-000014": [487, 75, 752, 14, 267, 296, 70, 304, 544, 1322, 312, 805, 284, 2081, 1950, 16],
        "row-000016": [520, 298, 78, 324, 440, 585, 268, 70, 788, 3999, 331, 284, 298, 325, 604, 79],
        "row-000021": [3035, 476, 1844, 1013, 1765, 345, 1074, 304, 544, 67, 1138, 14, 538, 284, 2467, 90],
    },
}


def sliced(draft: dict) -> dict:
    """A baseline's settings with its own pretraining / finetuning budget cut to the slice's."""
    return {**draft, **{k: {**draft[k], **SLICE} for k in ("pretrain", "finetune") if k in draft}}


def run_slice(out: pathlib.Path) -> dict:
    """The slice through the merged recipe (in this process): ``{"train": {name: {"sha256", "losses"}},
    "heldout": {name: loss}, "answers": {target: {row id: ids}}}``."""
    import torch

    from specdec.aasd import distill, zoo_specs
    from specdec.aasd import train as aasd_train
    from specdec.vlm.data import build_data
    from specdec.zoo import training

    torch.set_num_threads(1)
    records: dict = {"train": {}, "heldout": {}, "answers": {}}
    plain = training.train

    def spy(model, *args, **kwargs):
        log = plain(model, *args, **kwargs)
        digest = hashlib.sha256()
        for p in model.parameters():
            digest.update(p.detach().cpu().contiguous().numpy().tobytes())
        records["train"][kwargs["name"]] = {"sha256": digest.hexdigest(), "losses": log.losses}
        return log

    settings = dict(zoo_specs.TINY)
    settings["module"] = {**settings["module"], **SLICE}
    settings["finetune"] = {**settings["finetune"], **SLICE}
    settings["distill"] = {**settings["distill"], **DISTILL}
    settings["drafts"] = {name: sliced(draft) for name, draft in settings["drafts"].items()}
    training.train = spy
    try:
        data = build_data(2, 1)
        aasd_train.tiny("baselines", data, out, settings)
        aasd_train.tiny("modules", data, out, settings)
    finally:
        training.train = plain
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        if (folder / "module.safetensors").exists():
            records["heldout"][folder.name] = json.loads((folder / "config.json").read_text())["training"][
                "heldout_loss"
            ]
        elif folder.name.startswith("aasd-") and "llama" in folder.name:
            records["heldout"][folder.name] = json.loads((folder / "training_log.json").read_text())["summary"][
                "heldout_loss"
            ]
    for path in sorted(out.glob("distill-*.jsonl")):
        target = path.name.removeprefix("distill-").split("@")[0]
        records["answers"][target] = distill.load_answers(path)
    return records


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the fingerprints are x86 (MKL AVX2) bits")
def test_the_merged_recipe_trains_the_tiny_zoo_bit_for_bit_as_before(tmp_path):
    code = f"import json, pathlib, sys; sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})\n"
    code += "from test_aasd_recipe import run_slice\n"
    code += f"print('RESULT ' + json.dumps(run_slice(pathlib.Path({str(tmp_path)!r}))))\n"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **NARROW}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.split("RESULT ", 1)[1])
    want = BEFORE_TRAIN | REBUILT_TRAIN
    assert set(got["train"]) == set(want)
    for name, (_, losses) in want.items():  # float32 losses: another CPU's rounding moves them by ~1e-5 relative
        assert got["train"][name]["losses"] == pytest.approx(losses, rel=LOSS_REL), name
    heldout = BEFORE_HELDOUT | REBUILT_HELDOUT
    assert got["heldout"] == pytest.approx(heldout, rel=LOSS_REL)
    assert got["answers"] == BEFORE_ANSWERS  # every answer token
    # the weights' bits: all as recorded, or none (a CPU that rounds differently: see LOSS_REL)
    same = [k for k, (sha, _) in want.items() if got["train"][k]["sha256"][:16] == sha]
    assert len(same) in (0, len(want)), f"only {same} reproduce their recorded bits: a stage changed"


if __name__ == "__main__":  # python tests/test_aasd_recipe.py OUT.json: the slice's records, for a new BEFORE
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        pathlib.Path(sys.argv[1]).write_text(json.dumps(run_slice(pathlib.Path(tmp)), indent=1) + "\n")


def test_the_baselines_start_from_the_baselines_they_name(tmp_path):
    from specdec.aasd import draft_training, zoo_specs
    from specdec.aasd import train as aasd_train

    drafts = zoo_specs.TINY["drafts"]
    assert list(drafts)[:3] == ["PT-LLaMA", "FT-LLaMA", "FT-LLaVA"]  # each trains after what it starts from
    resolve = draft_training.resolve
    assert resolve(drafts["DT-LLaVA"], zoo_specs.TINY, tmp_path)["init"] == str(tmp_path / "aasd-ft-llava")
    assert resolve(drafts["FT-LLaVA"], zoo_specs.TINY, tmp_path)["language_model"] == str(tmp_path / "aasd-ft-llama")
    only = aasd_train.only_drafts(zoo_specs.TINY, ["DT-LLaMA"])["drafts"]
    assert list(only) == ["PT-LLaMA", "FT-LLaMA", "DT-LLaMA"] and only["DT-LLaMA"] is drafts["DT-LLaMA"]
