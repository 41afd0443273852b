"""The database: the engine and session lifecycle (``db``), the typed SQLAlchemy models
(``models``, ``models_auth`` on the shared ``model_base``) and the job states the queue uses.

Migrations live in the top-level ``migrations/`` folder and import their metadata from here.
"""
