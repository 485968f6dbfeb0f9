"""The shop's pages: the home page, the onboarding wizard, logging in, the tour's live cases,
the email confirmation link and the payment provider's webhook."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views
from .webhooks import payment_webhook

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("wizard/", views.wizard, name="wizard"),
    path("tour/live-cases/", views.start_live_cases, name="tour-live-cases"),
    # The link the onboarding emails (email_confirmation.LINK_PATH).
    path("email/confirm/<str:token>/", views.confirm_email, name="confirm-email"),
    # The payment provider's signed events (bank.WEBHOOK_PATH); give it the URL whole,
    # with its slash: APPEND_SLASH cannot redirect a POST.
    path("hooks/payments/", payment_webhook, name="payments-webhook"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
