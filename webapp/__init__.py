"""Tokenforge's web app: the Flask application (``app.py``'s ``create_app``) and the ``tokenforge``
command (``cli.py``), with the code in packages by area: ``web`` (the frame), ``store`` (the
database), ``access``, ``corpora``, ``training``, ``tokenizers``, ``playground``, ``chat``,
``leaderboards``, ``transfer`` and ``api``. ``docs/architecture.md`` maps every module.

This file stays empty on purpose: ``tokenforge train`` (``cli.py``) imports the package, and
the engine's commands should not pay for Flask and SQLAlchemy they never use.
"""
