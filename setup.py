"""Which files the wheel holds: the engine and webapp packages, and the web app's folders.

Everything else about the package is in ``pyproject.toml``. This file exists because the
repository keeps ``templates/``, ``static/`` and ``migrations/`` at the top level, beside the
packages, while an installed Tokenforge has no checkout around it: ``package_dir`` maps the three
folders into the ``webapp`` package (``webapp/templates``, ...), where ``webapp.assets`` finds
them. pyproject.toml alone cannot combine automatic package discovery with such a mapping.
"""

from setuptools import find_namespace_packages, find_packages, setup

ASSET_FOLDERS = ("templates", "static", "migrations")  # webapp.assets.ASSET_FOLDERS names the same

# Each folder ships whole. Its subfolders with importable names (templates/auth, ...) are listed
# as packages too, or setuptools warns that it ships files from a package nobody declared.
asset_packages = [
    f"webapp.{folder}{suffix}"
    for folder in ASSET_FOLDERS
    for suffix in ["", *(f".{sub}" for sub in find_namespace_packages(where=folder, exclude=["*__pycache__*"]))]
]

setup(
    packages=find_packages(include=["engine", "engine.*", "webapp", "webapp.*"]) + asset_packages,
    package_dir={f"webapp.{folder}": folder for folder in ASSET_FOLDERS},
    package_data={"engine": ["py.typed"], "webapp": ["py.typed"], **{f"webapp.{f}": ["**/*"] for f in ASSET_FOLDERS}},
    exclude_package_data={f"webapp.{f}": ["*.pyc"] for f in ASSET_FOLDERS},
)
