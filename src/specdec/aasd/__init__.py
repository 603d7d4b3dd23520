"""AASD (a speculating module that reads the target's KV cache, with a vision KV projector and Target-Draft
Attention training) on the tiny LLaVA proxy of ``specdec.tabed``.

``module``: the speculating module and the KV projector; ``tda``: Target-Draft Attention training; ``drafter``:
``AASDDrafter`` for ``engine.generate``; ``baselines``: FT/DT-LLaMA and FT/DT-LLaVA; ``train``: the zoo
(``python -m specdec.aasd.train all``); ``bench``: runs and tables (notebooks 40-41); ``findings``: A1-A5.
"""

from specdec.aasd.drafter import AASDDrafter
from specdec.aasd.module import KVProjector, ModuleConfig, SpeculatingModule, load_module

__all__ = ["AASDDrafter", "KVProjector", "ModuleConfig", "SpeculatingModule", "load_module"]
