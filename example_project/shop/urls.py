"""The shop's pages: the home page, the onboarding wizard, logging in, the tour's live cases."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("wizard/", views.wizard, name="wizard"),
    path("tour/live-cases/", views.start_live_cases, name="tour-live-cases"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
