"""Prefetch every model and dataset of a profile into ``$HF_HOME`` (``make download PROFILE=paper``).

Models through ``huggingface_hub.snapshot_download``, datasets through ``datasets.load_dataset`` (which also
prepares the Arrow cache offline runs read); prints what it fetched and what needs a token (gated ``meta-llama/*``:
accept the licence on the hub, then ``hf auth login``). Offline it stops at once with instructions.

    python scripts/download.py --profile paper [ids ...]
    python scripts/download.py list --profile paper
"""

import os
import sys

# the one online command: importing specdec sets the offline flags where they are unset (specdec.environment)
for _flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_flag, "0")

from specdec import hub  # noqa: E402

if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(hub.main(argv if argv[:1] in (["download"], ["list"]) else ["download", *argv]))
