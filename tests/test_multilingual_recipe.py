"""The one multilingual recipe trains what the two recipes before it trained: the shipped ``ml-*`` zoo is what the
code trains.

``slice_fingerprint`` runs every tiny training stage from its fixed seeds for a few steps (``zoo_run.train_all`` on a
small real data dict, pair ``de``: the target's pretraining (3 steps), its held-out report, self-distillation, the
generic drafter's pretraining (2), F and P-F finetunes (6 each), Fig. 4's smaller set (F and P-F) and the large
drafter (2 + 6)) and fingerprints what it saved: the sha256 of every model's float16 weights, every logged training
loss, the sha256 of ``ml_training.csv`` (every held-out metric; without the ``seconds`` and ``device`` columns) and of
``ml_distilled.jsonl``. ``RECORDED`` are those fingerprints from the code before the merge (main at ``aee4293``:
``specdec.multilingual.train`` + ``recipe`` with its own ``Examples`` batches and answer loss), run the same way.

Bitwise equality across machines: the native CPU kernels differ with the vector width (AVX2 / AVX-512: measured
here, the float16 weights' hashes change and one loss in ~50 moves by 1e-4), so the slice runs in a subprocess with
``ATEN_CPU_CAPABILITY=default`` (torch's portable kernels), ``MKL_CBWR=COMPATIBLE`` (MKL's CPU-independent code
path) and one thread; under those it is bit-identical run to run, and the old and new code give the same hashes
(also under the native AVX-512 kernels, checked by hand when the merge was made).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

# from the code before the merge (aee4293), ATEN_CPU_CAPABILITY=default, MKL_CBWR=COMPATIBLE, one thread
RECORDED: dict = {
    "ml-target": {
        "sha256": "37983f0e13d6bb0a0a5f530dd0537527b1b1b3632fc8e38ce875846b3a5dea27",
        "losses": [8.3986, 8.2976, 8.079],
    },
    "ml-draft-generic": {
        "sha256": "77da81e4f745cdcb18188e587f0de9cc9c591b2f48d266df34d042a23b203f68",
        "losses": [8.3492, 8.2954],
    },
    "ml-draft-f-de": {
        "sha256": "cef31694f6662f7a479c2ab5c380ecde95212c45371c71b9b2d64b8140309ae4",
        "losses": [8.1407, 7.9855, 7.761, 7.4238, 7.5749, 7.4363],
    },
    "ml-draft-f-de-b12": {"same_as": "ml-draft-f-de"},
    "ml-draft-pf-de": {
        "sha256": "df62079d32e68df5a6803aac90316744b876c0d23eb584aaa21b245f1cb3b19c",
        "losses": [8.1191, 7.8828, 7.9351, 7.6094, 7.5401, 7.443],
    },
    "ml-draft-pf-de-b12": {"same_as": "ml-draft-pf-de"},
    "ml-draft-f-de-b8": {
        "sha256": "ce342ea2266e4cf88e135831d17320bf2fdfe8c1cec97305c8f883809a84cc90",
        "losses": [8.111, 7.9026, 7.6427, 7.5088],
    },
    "ml-draft-pf-de-b8": {
        "sha256": "c8cf301cf5ddbd13967bf824aed205994a8113309b66e3a849e524ddecaa8b82",
        "losses": [8.1214, 7.9488, 7.7066, 7.5754],
    },
    "ml-draft-large-pf-de": {
        "sha256": "475288ac9f72d4f7ea9d0ceeb92f5c0efc339b746f626fe7558a8e2f2b755f9b",
        "losses": [8.3188, 8.2894, 8.2261, 8.1938, 7.8827, 7.6711, 7.454, 7.6347],
    },
    "ml_training.csv": "faa4bd0c5e36a02f916df2a697df331bc45f3acad24ff970f74c5c70386b0491",
    "ml_distilled.jsonl": "9b1f39170b3f6ac745e2ccf4a220910e09beb5901a81251a064d4a0a1fc1d499",
}

TINY = dict(
    batch_size=4, seq_len=32, ft_batch_size=8, eval_windows=2, eval_batch_size=16, max_new_tokens=8, gen_batch_size=16
)
TINY.update(n_budgets=2, budget_factor=2)
FIXED_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def fingerprint(out: pathlib.Path, rows: list[dict]) -> dict:
    """Per model: weights' sha256 and logged losses (an alias: its ``same_as``); the summary table's and the
    distillation's sha256."""
    from safetensors.torch import load_file

    found = {}
    for row in rows:
        name = row["model"]
        if row.get("same_as"):
            found[name] = {"same_as": row["same_as"]}
            continue
        tensors = load_file(out / name / "model.safetensors")
        digest = hashlib.sha256()
        for key in sorted(tensors):
            digest.update(key.encode())
            digest.update(tensors[key].numpy().tobytes())
        log = json.loads((out / name / "training_log.json").read_text())["log"]
        found[name] = {"sha256": digest.hexdigest(), "losses": [r["train_loss"] for r in log]}
    table = [
        {k: v for k, v in r.items() if k not in ("seconds", "device")}
        for r in csv.DictReader((out / "ml_training.csv").open(encoding="utf-8"))
    ]
    found["ml_training.csv"] = hashlib.sha256(json.dumps(table).encode()).hexdigest()
    found["ml_distilled.jsonl"] = hashlib.sha256((out / "ml_distilled.jsonl").read_bytes()).hexdigest()
    return found


def slice_fingerprint() -> dict:
    """Train the slice (module docstring) into a temporary folder; its fingerprint."""
    import torch

    from specdec.multilingual.data import build_data
    from specdec.multilingual.zoo_run import train_all

    torch.set_num_threads(1)
    data = build_data(max_docs=4, max_pairs=6)
    with tempfile.TemporaryDirectory() as folder:
        out = pathlib.Path(folder)
        rows = train_all(data, out, device="cpu", steps_scale=0.001, langs=["de"], prompts_per_set=3, **TINY)
        return fingerprint(out, rows)


def test_the_recipe_trains_what_the_shipped_zoo_was_trained_with():
    env = {**os.environ, **FIXED_ENV, "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(found) == set(RECORDED)
    for name, recorded in RECORDED.items():
        if isinstance(recorded, dict) and "losses" in recorded:
            assert found[name]["losses"] == recorded["losses"], name
    assert found == RECORDED  # every weight bit, held-out metric and distilled token


if __name__ == "__main__":  # the slice, run by the test in a subprocess (and to record RECORDED)
    print(json.dumps(slice_fingerprint()), flush=True)
