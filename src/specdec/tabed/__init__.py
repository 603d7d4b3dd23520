"""TABED (test-time adaptive batched ensemble drafting for vision-language targets).

``drafting``: the drafting rows M/T/C/P in one draft batch and the static / adaptive ensembles (re-exported
here: ``tabed.make_drafter(draft, "MT*", tokenizer)``); ``ensemble``: the weight policies; ``scenes``: the
PIL-rendered scenario suite; ``train``: the tiny LLaVA zoo; ``bench`` and ``latency``: the notebooks' studies.
"""

from specdec.tabed.drafting import ENSEMBLES, METHODS, DraftingRows, draft_captioner, make_drafter

__all__ = ["ENSEMBLES", "METHODS", "DraftingRows", "draft_captioner", "make_drafter"]
