"""A form post over Django's request limits: the form again with the limit, not a bare 400.

Django refuses a post larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (or with more
fields or files than it takes) when ``request.POST`` is first read, with an
exception that answers its bare 400 page. The first to read it is the CSRF
check, before any view runs. So the admin's instance and add pages check CSRF
themselves with :func:`csrf_protect_within_limits`: Django's own check, except
that a post too large to read is let through *unread*; the view then finds it
unreadable (:func:`post_limit_problem`), changes nothing and shows the form with
the limit. Every readable post is checked exactly as Django checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.decorators import decorator_from_middleware, method_decorator
from django.views.decorators.csrf import csrf_exempt

# The answer of the first read, kept on the request: after a multipart body was refused
# half-read, a second read of request.POST finds the rest of it and no error at all.
_PROBLEM = "_django_workflows_post_problem"


def post_limit_problem(request: HttpRequest) -> str | None:
    """Why this request's form cannot be read (the limit it passed), or None when it can."""
    if request.method != "POST":
        return None
    if not hasattr(request, _PROBLEM):
        setattr(request, _PROBLEM, _read_post(request))
    problem: str | None = getattr(request, _PROBLEM)
    return problem


def _read_post(request: HttpRequest) -> str | None:
    try:
        request.POST  # noqa: B018
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        size = request.META.get("CONTENT_LENGTH")
        sent = f"{size} bytes, " if size and size.isdigit() else ""
        return (f"The form sent {sent}more than the {limit} bytes this site accepts "
                "(Django's DATA_UPLOAD_MAX_MEMORY_SIZE). Nothing was saved, and what was "
                "typed could not be read back: make it smaller.")
    except TooManyFieldsSent:
        return (f"The form sent more than the {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} "
                "fields this site accepts (Django's DATA_UPLOAD_MAX_NUMBER_FIELDS). "
                "Nothing was saved.")
    except TooManyFilesSent:
        return (f"The form sent more than the {settings.DATA_UPLOAD_MAX_NUMBER_FILES} "
                "files this site accepts (Django's DATA_UPLOAD_MAX_NUMBER_FILES). "
                "Nothing was saved.")
    return None


class CsrfWithinLimits(CsrfViewMiddleware):
    """Django's CSRF check, which lets a post it cannot read through to the view unread.

    That is safe because the view cannot act on a form it cannot read either: it
    answers the form again, as it would a GET.
    """

    def process_view(self, request: HttpRequest, callback: Any, callback_args: Any,
                     callback_kwargs: Any) -> HttpResponseForbidden | None:
        if post_limit_problem(request) is not None:
            return None
        return super().process_view(request, callback, callback_args, callback_kwargs)


_csrf_within_limits = decorator_from_middleware(CsrfWithinLimits)


def csrf_protect_within_limits(view_method: Callable[..., HttpResponse]
                               ) -> Callable[..., HttpResponse]:
    """For a ModelAdmin view method: CSRF checked by :class:`CsrfWithinLimits` instead.

    ``csrf_exempt`` tells Django's middleware and ``AdminSite.admin_view`` (which
    would read the post first) to leave the check to this one.
    """
    return csrf_exempt(method_decorator(_csrf_within_limits)(view_method))
