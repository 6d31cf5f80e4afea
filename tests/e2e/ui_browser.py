"""Support of the UI browser test: users and their tokens, REST calls as a user, and a headless Chromium.

The browser is Debian's `chromium`, driven through Playwright without any browser download.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

from devcluster.airflow_stack import REPO_ROOT, StackSettings

USERS = {"admin": "admin", "viewer": "viewer", "outsider": "viewer"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def ui_settings(home: Path) -> StackSettings:
    """Login on, three users with known passwords, the one-DAG-denied auth manager, provider plugins loaded."""
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({user: f"{user}-pw" for user in USERS}))
    paths = [str(REPO_ROOT), str(REPO_ROOT / "tests" / "e2e"), os.environ.get("PYTHONPATH", "")]
    return StackSettings(parallelism=4, extra_env={
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",  # a busy CI machine answers a worker slowly
        "AIRFLOW__CORE__AUTH_MANAGER": "ui_auth.OneDagDeniedAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, r in USERS.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
    })


class Api:
    """REST calls to the api-server as one user (a token from `POST /auth/token`)."""

    def __init__(self, base_url: str, user: str) -> None:
        self.base_url = base_url
        self.user = user
        self.token = str(self.call("POST", "/auth/token", {"username": user, "password": f"{user}-pw"},
                                   auth=False)["access_token"])

    def call(self, method: str, path: str, body: Any = None, *, auth: bool = True) -> Any:
        request = urllib.request.Request(f"{self.base_url}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        if auth:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def status(self, method: str, path: str) -> int:
        """The HTTP status of a call whose answer does not matter (a refused one raises HTTPError)."""
        try:
            self.call(method, path)
        except urllib.error.HTTPError as exc:
            return exc.code
        return 200

    def xcom(self, dag_id: str, run_id: str, task_id: str) -> Any:
        entry = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/"
                                 "return_value?deserialize=true")
        value = entry["value"]
        return json.loads(value) if isinstance(value, str) else value

    def task_state(self, dag_id: str, run_id: str, task_id: str) -> str:
        return str(self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}")["state"])


@contextmanager
def chromium() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        raise RuntimeError("Debian's chromium is not installed: run `make browser`")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def page_as(browser: Browser, api: Api) -> Page:
    """A fresh browser context logged in as `api.user`: the UI's `_token` cookie holds the JWT."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_cookies([{"name": "_token", "value": api.token, "url": api.base_url}])
    context.set_default_timeout(60_000)  # a loaded CI machine answers slowly
    return context.new_page()
