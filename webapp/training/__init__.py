"""Training tokenizers: the training form, the "train" jobs' child processes (training, and
extending a tokenizer), and the tokenizer pages (``views``, the "tokenizers" blueprint).
"""
