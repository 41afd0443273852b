"""Training tokenizers: the training form, the database job queue and its worker, the child
processes that run a job, progress and ETA, the supervisor that keeps workers alive, and the
tokenizer pages (``views``, the "tokenizers" blueprint).
"""
