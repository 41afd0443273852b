"""Tokenforge's web app: the Flask application (``app.py``'s ``create_app``), its blueprints, the
job queue and workers, and the ``tokenforge`` command (``cli.py``).

This file stays empty on purpose: ``tokenforge train`` (``cli.py``) imports the package, and
the engine's commands should not pay for Flask and SQLAlchemy they never use.
"""
