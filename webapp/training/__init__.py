"""Training tokenizers: the training form and the training jobs' pages (``views``, the "training"
blueprint, ``/train`` and ``/jobs``), and the "train" jobs (their kind, registered with the queue,
and their child processes: training, and extending a tokenizer).
"""
