"""Where the web app's templates, static files and migrations live, in a checkout and in a wheel.

The repository keeps ``templates/``, ``static/`` and ``migrations/`` beside the ``webapp``
package; the wheel (``setup.py``) ships them inside it, as ``webapp/templates`` and so on, so an
installed Tokenforge needs no checkout. :func:`asset_dir` is the one place that knows both
layouts: Flask's template and static folders and Alembic's script location all come from it,
whether Tokenforge runs from a checkout, an editable install or a wheel.
"""

from __future__ import annotations

from pathlib import Path

#: The folders that ship with the web app; setup.py maps the same three into the package.
ASSET_FOLDERS = ("templates", "static", "migrations")

_PACKAGE_DIR = Path(__file__).resolve().parent  # webapp/, this file being webapp/assets.py


def asset_dir(name: str) -> Path:
    """The folder ``name`` inside the installed package, else beside it in the checkout."""
    if name not in ASSET_FOLDERS:
        raise ValueError(f"{name!r} is not one of the web app's folders {ASSET_FOLDERS}.")
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"Tokenforge's {name}/ folder is in neither {_PACKAGE_DIR} nor {_PACKAGE_DIR.parent}; "
        "reinstall the package (pip install .) or run from a full checkout."
    )
