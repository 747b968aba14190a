"""`trainmedic serve`: the local web app over the same library and Diagnosis as the CLI.

Importing this package costs nothing; fastapi, SQLAlchemy and jinja2 load in `trainmedic.web.app`,
so the core (and `trainmedic diagnose`) never pays for the web stack.
"""

from __future__ import annotations

__all__ = ["Settings", "create_app"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from trainmedic.web import app

        return getattr(app, name)
    raise AttributeError(name)
