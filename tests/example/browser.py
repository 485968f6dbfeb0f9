"""Playwright driving Debian's chromium (never a downloaded browser), for browser tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.db import connection

T = TypeVar("T")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                      headless=True)


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def off_the_browsers_thread(call: Callable[[], T], *, timeout: float = 120) -> T:
    """``call()`` in a thread of its own, its result (or its exception) here. Playwright's
    sync API runs an event loop in the test's thread, and durable code the immediate runner
    runs there finds that loop and answers as ``async def`` code does (an awaitable)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(call())
        except BaseException as error:  # handed to the test's thread
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="off-the-browsers-thread")
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{call} did not return within {timeout}s"
    if errors:
        raise errors[0]
    return results[0]
