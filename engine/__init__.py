"""Tokenforge's tokenizer engine: pure Python on ``regex``; the public API is listed in ``__all__``."""
