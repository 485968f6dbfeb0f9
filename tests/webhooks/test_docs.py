"""docs/webhooks.md's code, run as written: its deliveries function, URLconf, settings,
test and subclass, and its curl command against a live server."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

from django_workflows import registry, services
from django_workflows.webhooks import RejectEvent

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = (DOCS / "webhooks.md").read_text()


def blocks(language: str, text: str = PAGE) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def run(code: str, **names) -> dict:
    exec(code, names)  # the page's own code, as a reader runs it
    return names


@pytest.fixture
def page(monkeypatch, settings):
    """The page's project: waiting.md's order workflow, its orders/webhooks.py, its URLconf."""
    definition = blocks("python", (DOCS / "waiting.md").read_text())[0]
    registry.register(run(definition)["orders"], origin="docs/waiting.md")
    deliveries, refunds, urls, secret, test, github = blocks("python")
    package, module = types.ModuleType("orders"), types.ModuleType("orders.webhooks")
    package.__path__ = []
    module.__dict__.update(run(deliveries))
    monkeypatch.setitem(sys.modules, "orders", package)
    monkeypatch.setitem(sys.modules, "orders.webhooks", module)
    urlconf = types.ModuleType("docs_webhooks_urls")
    urlconf.__dict__.update(run(urls))
    monkeypatch.setitem(sys.modules, "docs_webhooks_urls", urlconf)
    settings.ROOT_URLCONF = "docs_webhooks_urls"
    yield types.SimpleNamespace(refunds=refunds, secret=secret, test=test, github=github)
    registry.unregister("order")


def waiting_order(intent: str = "pi_1"):
    return services.next(services.create("order", state={"intent": intent, "payment": None},
                                         start=True))


@pytest.mark.django_db
def test_the_pages_test_passes(page, settings):
    run(page.test)["test_a_succeeded_payment_intent_moves_its_order_on"](
        Client(), settings, None)


def test_the_pages_settings_read_the_secret_from_the_environment(page, monkeypatch):
    monkeypatch.setenv("PAYMENTS_WEBHOOK_SECRET", "whsec_from_env")

    assert run(page.secret)["PAYMENTS_WEBHOOK_SECRET"] == "whsec_from_env"


def test_the_pages_refund_function_rejects_what_it_cannot_read(page):
    refund_deliveries = run(page.refunds)["refund_deliveries"]

    with pytest.raises(RejectEvent, match=r"refund\.order"):
        refund_deliveries(None, {"id": "evt_1", "refund": ["O-1"]})
    assert refund_deliveries(None, {"refund": {"order": "O-1"}})[0].reference == "O-1"


@pytest.mark.django_db
def test_the_pages_github_webhook_takes_a_body_signed_its_way(page):
    view = run(page.github)["GitHubWebhook"].as_view(name="github", secret="gh-secret",
                                                      deliveries=lambda request, event: [])
    body = b'{"zen": "Keep it logically awesome."}'
    signed = "sha256=" + hmac.new(b"gh-secret", body, hashlib.sha256).hexdigest()

    def post(signature: str):
        return view(RequestFactory().post("/hooks/github/", body, content_type="application/json",
                                          headers={"X-Hub-Signature-256": signature,
                                                   "X-GitHub-Delivery": "d-1"}))

    assert post(signed).status_code == 200
    assert post(signed[:-1] + "0").status_code == 403


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("openssl")),
                    reason="needs curl and openssl")
def test_the_pages_curl_command_moves_an_order_on_and_again_is_a_repeat(page, live_server,
                                                                        settings):
    settings.PAYMENTS_WEBHOOK_SECRET = "whsec_test"
    order = waiting_order("pi_1")
    command = blocks("sh")[0].replace("http://127.0.0.1:8000", live_server.url)
    shown = json.loads(blocks("json")[0])

    first, again = (json.loads(subprocess.run(["bash", "-c", command], capture_output=True,
                                              check=True, text=True, timeout=30).stdout)
                    for _ in range(2))

    assert first.keys() == shown.keys()
    assert first["deliveries"][0].keys() == shown["deliveries"][0].keys()
    assert first["deliveries"][0]["outcome"] == "taken"
    assert first["deliveries"][0]["instances"] == [str(order.pk)]
    assert again["deliveries"][0]["outcome"] == "repeated"
