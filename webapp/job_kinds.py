"""Every kind of job the queue runs: importing this module registers each area's kinds, once.

The queue (``jobs/``) sits below the areas and knows a kind only through its registry
(``jobs/kinds.py``); each area describes its kinds, and registers them, in its own ``job_kinds.py``.
A registry that imports fill needs one place that makes the imports, above the areas like
``app.py``: this module. Whatever queues, runs or recovers jobs imports it before it starts:
``create_app`` (the web processes), ``tokenforge worker`` and ``serve``'s supervisor (``cli.py``).
A process that forgot would fail each job it claims with a sentence saying that no area registers
its kind, not run it wrongly.
"""

from __future__ import annotations

from webapp.corpora import job_kinds as corpora_kinds
from webapp.leaderboards import job_kinds as leaderboard_kinds
from webapp.training import job_kinds as training_kinds

#: The registered kinds, for a reader (and the tests): registering happened on import.
KINDS = (training_kinds.TRAIN, training_kinds.EXTEND, corpora_kinds.ANALYSE, leaderboard_kinds.LEADERBOARD)
