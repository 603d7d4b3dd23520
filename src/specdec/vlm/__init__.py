"""The tiny LLaVA proxy that TABED and AASD share: what the papers' vision-language targets are replaced by.

``scenes``: the scenario suite (rendered pictures ``pictures``, their ground truths ``groundtruth``, the scripted
dialogues ``dialogues``); ``data``: the tokenised, rendered training set; ``batches``: it as training batches;
``train``: the zoo (``tabed-target``, ``tabed-draft``, ``tabed-captioner``; ``python -m specdec.vlm.train all``);
``prompts``: a request through the model's processor (``encode``) and its digest (``request_digest``);
``llava``: where the images sit in a LLaVA prompt (``image_runs``) and the visual tokens a LLaVA makes of them.
It imports no paper.
"""
