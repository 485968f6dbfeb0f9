"""A customer confirms their email address through the signed link the onboarding emails.

Opening the account (the ``confirm`` step) enters ``email``, which emails a link and waits
for the signal ``email-confirmed``; the link's page asks, and its button sends the signal.
A forged, altered or expired link, or one whose onboarding is gone or finished, is a page
that says so, never a server error, and changes nothing.
"""

from __future__ import annotations

import re
import time
import uuid
from urllib.parse import urlsplit

import pytest
from django.core import mail, signing
from django.core.mail import EmailMessage

from django_workflows.models import WorkflowEvent
from django_workflows.reading.waiting import waiting_of
from example_project.shop import email_confirmation
from example_project.shop.mailbox import EmailBackend
from example_project.shop.models import Customer, SentEmail
from example_project.shop.onboarding import onboarding

from .test_onboarding import decide, fill, to_identity_check, to_review

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.example.urls")]

LINK = re.compile(r"http://\S+/email/confirm/\S+/")
LINK_LIFE = onboarding.step("email").wait.timeout  # SHOP_TIMES["EMAIL_LINK"]


@pytest.fixture
def opened(wf, operator):
    """An onboarding whose account was opened: it waits for its email link."""
    instance = to_identity_check(wf)
    decide(wf, to_review(wf, instance), operator, "approved")
    fill(wf, instance, accept_terms=True)
    return wf.next(instance)


def link_in(message) -> str:
    return LINK.search(message.body)[0]


def path_of(link: str) -> str:
    return urlsplit(link).path


@pytest.fixture
def link(opened) -> str:
    [message] = mail.outbox
    return link_in(message)


def events(instance) -> int:
    return WorkflowEvent.objects.filter(instance_id=instance.pk).count()


def test_opening_the_account_emails_a_signed_link_and_waits_for_it(wf, opened):
    [message] = mail.outbox
    assert (message.subject, message.to) == ("Confirm your email address", ["ann@example.com"])
    assert link_in(message).startswith("http://127.0.0.1:8000/email/confirm/")
    shown = waiting_of(wf.reload(opened).snap)
    assert (shown.kind, shown.name) == ("signal", "email-confirmed")


def test_the_link_asks_before_it_confirms_anything(client, wf, opened, link):
    page = client.get(path_of(link))

    assert page.status_code == 200
    assert 'id="confirm-email"' in page.content.decode()
    assert "ann@example.com" in page.content.decode()
    assert wf.reload(opened).current_step == "email"


def test_confirming_through_the_link_ends_the_onboarding_with_the_address_confirmed(
        client, wf, opened, link):
    page = client.post(path_of(link))

    assert page.status_code == 200
    assert "is confirmed" in page.content.decode()
    done = wf.reload(opened)
    assert (done.status, done.state["email_confirmation"]) == ("completed",
                                                              {"email": "ann@example.com"})
    assert Customer.objects.get(onboarding=str(opened.pk)).email_confirmed_at is not None
    signal = WorkflowEvent.objects.get(instance_id=opened.pk, type="signal")
    assert signal.data["message_id"].startswith("email-link:")
    assert signal.data["sender"] is None  # trusted code: the signed link is the proof


def test_a_second_click_says_the_address_was_confirmed_already(client, wf, opened, link):
    client.post(path_of(link))
    seen = events(opened)

    page = client.post(path_of(link))

    assert page.status_code == 200
    assert "was confirmed already" in page.content.decode()
    assert events(opened) == seen


def forged(link: str) -> list[str]:
    token = path_of(link).split("/")[-2]
    body, _, signed = token.rpartition(":")
    value = {"onboarding": str(uuid.uuid4()), "email": "ann@example.com"}
    return [
        token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB"),  # its signature altered
        body.replace(body[-4:], "abcd") + ":" + signed,  # what it says altered
        signing.dumps(value, salt=email_confirmation.SALT, key="a-guessed-secret-key"),
        signing.dumps(value, salt="another-purpose"),  # a signature this site made elsewhere
        "not-a-token",
    ]


def test_a_forged_or_altered_link_is_refused_with_a_page_and_changes_nothing(client, wf,
                                                                            opened, link):
    seen = events(opened)

    for token in forged(link):
        for send in (client.get, client.post):
            page = send(email_confirmation.LINK_PATH.format(token=token))
            assert page.status_code == 400, token
            assert "This link is not one we sent" in page.content.decode()

    assert events(opened) == seen
    assert wf.reload(opened).current_step == "email"


def test_an_expired_link_is_refused_with_a_page(client, wf, opened, monkeypatch):
    made_at = time.time() - LINK_LIFE - 60
    with monkeypatch.context() as then:
        then.setattr(signing.time, "time", lambda: made_at)
        old = email_confirmation.make_link(str(opened.pk), "ann@example.com")

    page = client.post(path_of(old))

    assert page.status_code == 410
    assert "This link has expired" in page.content.decode()
    assert wf.reload(opened).current_step == "email"


def test_a_link_whose_onboarding_is_gone_is_refused_with_a_page(client, db):
    link = email_confirmation.make_link(str(uuid.uuid4()), "ann@example.com")

    page = client.post(path_of(link))

    assert page.status_code == 404
    assert "We know no application this link is for" in page.content.decode()


def test_a_link_of_a_cancelled_onboarding_is_refused_with_a_page(client, wf, opened, link):
    wf.cancel(opened)

    page = client.post(path_of(link))

    assert page.status_code == 409
    assert "Your application is finished" in page.content.decode()


def test_going_back_and_on_again_emails_a_new_link(wf, opened):
    wf.back(opened)
    wf.next(opened)

    assert [m.subject for m in mail.outbox] == ["Confirm your email address"] * 2
    assert wf.reload(opened).current_step == "email"


def test_an_unopened_link_lets_the_onboarding_end_without_it(wf, opened):
    wf.advance(LINK_LIFE)

    done = wf.reload(opened)
    assert (done.status, done.state["email_confirmation"]) == ("completed", None)
    assert Customer.objects.get(onboarding=str(opened.pk)).email_confirmed_at is None


def test_the_demo_mailbox_prints_each_email_and_keeps_it_for_the_admin(admin_client, capsys):
    message = EmailMessage("Confirm your email address",
                           "Open http://127.0.0.1:8000/email/confirm/abc/ <now>",
                           "shop@example.com", ["ann@example.com"])

    assert EmailBackend().send_messages([message]) == 1

    assert "Subject: Confirm your email address" in capsys.readouterr().out
    kept = SentEmail.objects.get()
    assert (kept.to, kept.subject) == ("ann@example.com", "Confirm your email address")
    page = admin_client.get(f"/admin/shop/sentemail/{kept.pk}/change/").content.decode()
    assert '<a href="http://127.0.0.1:8000/email/confirm/abc/" rel="nofollow">' in page
    assert "&lt;now&gt;" in page  # the rest of the text is escaped


def test_the_demo_mailbox_prints_a_long_link_whole(capsys):
    # Django 6.1 printed the body quoted-printable: the link was cut in three lines.
    link = f"http://127.0.0.1:8000/email/confirm/{'x' * 120}:1xZilS:{'y' * 43}/"
    message = EmailMessage("Confirm your email address", f"Hello,\n\n{link}\n",
                           "shop@example.com", ["ann@example.com"])

    EmailBackend().send_messages([message])

    printed = capsys.readouterr().out
    assert LINK.findall(printed) == [link]
    assert "To: ann@example.com" in printed
