"""specdec: speculative decoding on one engine (draft → verify → accept, with KV caches).

Start with ``specdec.zoo.models.load_pair`` and ``specdec.engine.generate``; the verification rules are in
``specdec.verify``, drafters in ``specdec.drafters``, latency and speedup helpers in ``specdec.bench``.
"""

from specdec.drafters import ModelDrafter, PromptLookupDrafter
from specdec.engine import GenerationResult, autoregressive, generate
from specdec.sampling import SamplingConfig
from specdec.zoo.models import load, load_pair

__version__ = "0.1.0"
__all__ = [
    "GenerationResult",
    "ModelDrafter",
    "PromptLookupDrafter",
    "SamplingConfig",
    "autoregressive",
    "generate",
    "load",
    "load_pair",
]
