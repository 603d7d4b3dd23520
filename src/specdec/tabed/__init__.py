"""TABED (test-time adaptive batched ensemble drafting for vision-language targets).

``algorithm``: the drafting rows M/T/C/P in one draft batch, the weight policies and the static / adaptive
ensembles (re-exported here: ``tabed.make_drafter(draft, "MT*", tokenizer)``); ``captioners``: the captioners of
the C row; ``data``: the requests (tiny suite or paper datasets); ``experiments``: the runs of notebooks 10-14 on
the harness; ``tables``: the paper's numbers, table layouts and thresholds; ``findings``: T1-T5; ``latency`` and
``latency_findings``: notebook 14's measurements and their reading.
The tiny LLaVA proxy it runs on (scenes, the zoo, prompts) is ``specdec.vlm``.
"""

from specdec.tabed.algorithm import ENSEMBLES, METHODS, DraftingRows, make_drafter
from specdec.tabed.captioners import draft_captioner

__all__ = ["ENSEMBLES", "METHODS", "DraftingRows", "draft_captioner", "make_drafter"]
