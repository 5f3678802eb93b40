"""The annotation page: ``page.html`` (shipped as package data) with the task's public content filled in.

The template is a complete page, styles and script inline, so the file works opened from
disk (``file://``) with no server and no network. The task goes in as JSON inside a
``<script type="application/json">`` element; every ``<``, ``>`` and ``&`` is escaped so
no text of a document or response can end that element.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from ..errors import InputError

PLACEHOLDER = "/*TASK*/"
TASK_ELEMENT = re.compile(r'<script id="task-data" type="application/json">(.*?)</script>', re.DOTALL)


def render_page(public: dict) -> str:
    """The page for ``public`` (a task's items, dimensions and answer scale, no system names)."""
    template = resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")
    data = (
        json.dumps(public, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    return template.replace(PLACEHOLDER, data, 1)


def read_page(path: Path) -> dict:
    """The public content :func:`render_page` put into the page at ``path``: what the annotators saw."""
    fix = "rebuild the task with 'faithkit annotate build'"
    try:
        found = TASK_ELEMENT.search(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} not found; {fix}") from None
    try:
        public = json.loads(found.group(1)) if found else None
    except json.JSONDecodeError:
        public = None
    if not isinstance(public, dict) or public.get("format") != "faithkit-annotation-task":
        raise InputError(f"{path} is not a faithkit annotation page; {fix}")
    return public
