"""The annotation page: ``page.html`` (shipped as package data) with the task's public content filled in.

The template is a complete page, styles and script inline, so the file works opened from
disk (``file://``) with no server and no network. The task goes in as JSON inside a
``<script type="application/json">`` element; every ``<``, ``>`` and ``&`` is escaped so
no text of a document or response can end that element.
"""

from __future__ import annotations

import json
from importlib import resources

PLACEHOLDER = "/*TASK*/"


def render_page(public: dict) -> str:
    """The page for ``public`` (a task's items, dimensions and answer scale, no system names)."""
    template = resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")
    data = (
        json.dumps(public, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    return template.replace(PLACEHOLDER, data, 1)
