"""Tokenizer models: one module per algorithm, each implementing ``engine.models.base.Model``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""
