"""Where a templated manifest comes from: a dict, YAML/JSON text, or a file named by its path.

Airflow's `template_ext` would treat every string ending in `.yaml`, `.yml` or `.json` as a
template file, including the strings nested in a dict manifest (`args: ["--config", "a.json"]`),
and its loader cannot open absolute paths. So the operators declare no `template_ext`: Jinja
renders the manifest as a value (a dict's strings stay strings), and only a top-level string
that names a file is resolved here, then rendered as a template.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard

import jinja2

MANIFEST_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def is_manifest_path(value: object) -> TypeGuard[str]:
    """A one-line string ending in .yaml/.yml/.json names a file; any other value is the manifest itself."""
    return isinstance(value, str) and "\n" not in value and value.strip().endswith(MANIFEST_FILE_SUFFIXES)


def read_manifest_file(path: str, jinja_env: jinja2.Environment) -> tuple[str, str]:
    """(text, where it was found): an absolute path is read as is, a relative one through the DAG's
    template loader (the DAG folder, then `template_searchpath`). A missing file names where it looked."""
    path = path.strip()
    if Path(path).is_absolute():
        try:
            return Path(path).read_text(encoding="utf-8"), path
        except FileNotFoundError:
            raise FileNotFoundError(f"manifest file {path} does not exist") from None
        except OSError as exc:
            raise OSError(f"manifest file {path} cannot be read: {exc.strerror or exc}") from None
    loader = jinja_env.loader
    if loader is None:
        raise FileNotFoundError(f"manifest file {path} is a relative path, but the task has no DAG folder or "
                                "template_searchpath to look in; give an absolute path")
    try:
        text, filename, _ = loader.get_source(jinja_env, path)
    except jinja2.TemplateNotFound:
        raise FileNotFoundError(f"manifest file {path} was not found; looked in {_searched(loader)}") from None
    return text, filename or path


def render_manifest_file(path: str, jinja_env: jinja2.Environment, render: Callable[[str], Any]) -> Any:
    """The file's content rendered by `render` (the task's Jinja environment and context).

    Jinja errors carry a note naming the file, since the template itself has no name.
    """
    text, origin = read_manifest_file(path, jinja_env)
    try:
        return render(text)
    except jinja2.TemplateError as exc:
        exc.add_note(f"while rendering manifest file {origin}")
        raise


def _searched(loader: jinja2.BaseLoader) -> str:
    folders = getattr(loader, "searchpath", None)
    if isinstance(folders, list | tuple) and folders:
        return ", ".join(str(folder) for folder in folders) + " (the DAG folder and template_searchpath)"
    return f"the template loader {type(loader).__name__}"
