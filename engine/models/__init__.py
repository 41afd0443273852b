"""Tokenizer models: one module per algorithm, each implementing ``engine.models.base.Model``."""
