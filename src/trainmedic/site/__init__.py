"""The static encyclopedia: HTML pages generated from the library, never written by hand.

`trainmedic.site.build` holds the renderers the static build and the web app share; it imports
jinja2 only when a page is rendered, so importing this package costs nothing.
"""

from __future__ import annotations

__all__ = ["SiteError", "build_site", "render_entry_page", "render_index", "static_dir"]


def __getattr__(name: str) -> object:
    # Re-export lazily: `import trainmedic.site` stays free of the template stack.
    if name in __all__:
        from trainmedic.site import build

        return getattr(build, name)
    raise AttributeError(name)
