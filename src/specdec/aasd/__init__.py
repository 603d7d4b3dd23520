"""AASD (a speculating module that reads the target's KV cache, with a vision KV projector and Target-Draft
Attention training) on the tiny LLaVA proxy of ``specdec.vlm``.

``algorithm``: the speculating module, the KV projector and ``AASDDrafter`` for ``engine.generate``; ``tda``:
Target-Draft Attention training; ``baselines``: FT/DT-LLaMA and FT/DT-LLaVA as drafters; ``recipe``: the one
training recipe (``distill``: the target's answers; ``draft_training``: the baselines; ``rows``: what it trains on;
``zoo_specs``: its tiny and paper settings; ``train``: its command,
``python -m specdec.aasd.train all | paper``); ``experiments``: runs (notebooks 40-41); ``tables``; ``findings``:
A1-A5.
"""

from specdec.aasd.algorithm import AASDDrafter, KVProjector, ModuleConfig, SpeculatingModule, load_module

__all__ = ["AASDDrafter", "KVProjector", "ModuleConfig", "SpeculatingModule", "load_module"]
