"""A confirmation belongs to the address the link named (issue 36): a customer who
confirmed an address, went back, merge-patched another address and went on again does
not have the new address shown as confirmed."""

from __future__ import annotations

import json

import pytest
from django.core import mail

from example_project.shop.models import Customer

from .test_email_confirmation import link_in, opened, path_of  # noqa: F401 - a fixture

pytestmark = [pytest.mark.django_db, pytest.mark.needs_api,
              pytest.mark.urls("tests.example.urls")]


def merge_patch(customer, instance, patch) -> int:
    from rest_framework.test import APIClient  # here: without the [api] extra the module loads

    client = APIClient()
    client.force_authenticate(customer)
    return client.patch(f"/api/instances/{instance.pk}/state/", json.dumps({"state": patch}),
                        content_type="application/merge-patch+json").status_code


def test_an_address_swapped_after_the_confirmation_is_not_confirmed(
        client, wf, customer, opened):  # noqa: F811 - the fixture
    [message] = mail.outbox
    assert client.post(path_of(link_in(message))).status_code == 200
    record = Customer.objects.get(onboarding=str(opened.pk))
    assert (record.email, record.email_confirmed_at is not None) == ("ann@example.com", True)

    while wf.reload(opened).current_step != "confirm":  # back, as the wizard allows
        wf.back(opened)
    assert merge_patch(customer, opened, {"email": "mallory@example.com"}) == 200
    wf.next(opened)  # on again: the account is opened with the new address

    record.refresh_from_db()
    assert (record.email, record.email_confirmed_at) == ("mallory@example.com", None)
    assert wf.reload(opened).current_step == "email"  # it waits for the new address's link
    assert mail.outbox[-1].to == ["mallory@example.com"]


def test_the_new_address_is_confirmed_by_its_own_link(client, wf, customer, opened):  # noqa: F811
    client.post(path_of(link_in(mail.outbox[0])))
    while wf.reload(opened).current_step != "confirm":
        wf.back(opened)
    merge_patch(customer, opened, {"email": "ann.b@example.com"})
    wf.next(opened)

    assert client.post(path_of(link_in(mail.outbox[-1]))).status_code == 200

    record = Customer.objects.get(onboarding=str(opened.pk))
    assert (record.email, record.email_confirmed_at is not None) == ("ann.b@example.com", True)


def test_going_on_with_the_same_address_keeps_its_confirmation(client, wf, opened):  # noqa: F811
    client.post(path_of(link_in(mail.outbox[0])))
    while wf.reload(opened).current_step != "confirm":
        wf.back(opened)
    wf.next(opened)

    record = Customer.objects.get(onboarding=str(opened.pk))
    assert (record.email, record.email_confirmed_at is not None) == ("ann@example.com", True)
