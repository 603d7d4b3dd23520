"""Multilingual speculative decoding (Towards Fast Multilingual LLM Inference).

``parallel``: the gettext parallel corpus (Django, Sphinx); ``train``: the pretrain → self-distil → finetune
pipeline of the multilingual zoo; ``experiments``: every SD method side by side with plain decoding, on the harness;
``tables``: the paper's table layouts and the quality scores.
"""
