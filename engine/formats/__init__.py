"""Readers and writers of tokenizer file formats other than ``tokenizer.json``."""
