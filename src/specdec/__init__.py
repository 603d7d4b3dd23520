"""specdec: speculative decoding on one engine (draft → verify → accept, with KV caches).

Start with ``specdec.zoo.models.load_pair`` and ``specdec.engine.generate``; the verification rules are in
``specdec.verify``, drafters in ``specdec.drafters``, latency and speedup helpers in ``specdec.bench``.
"""

from specdec import environment

environment.apply()  # offline and the caches in the checkout, before transformers / huggingface_hub are imported

from specdec.drafters import ModelDrafter, PromptLookupDrafter  # noqa: E402
from specdec.engine import GenerationResult, autoregressive, generate  # noqa: E402
from specdec.sampling import SamplingConfig  # noqa: E402
from specdec.zoo.models import load, load_pair  # noqa: E402

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
