"""Stored tokenizers and their pages: what a stored tokenizer is to the web app (the engine object
parsed from its row, ``loaded``), its summary figures, the OpenAI presets with the installer that
fetches their rank tables, and the pages under ``/tokenizers/``: the list, a tokenizer's page and
deleting one (``views``, the "tokenizers" blueprint), the vocabulary diff, the merge and the extension
form (``diff_views``, ``merge_views``, ``extend_views``).
"""
