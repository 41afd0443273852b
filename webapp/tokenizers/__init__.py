"""What a stored tokenizer is to the web app: the engine object parsed from its row (``loaded``),
its summary figures, and the OpenAI presets with the installer that fetches their rank tables.

No blueprint lives here: the tokenizer pages are in ``webapp.training.views``.
"""
