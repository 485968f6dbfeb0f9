"""The REST API (``docs/api.md``), optional: ``pip install "django-durable-workflows[api]"``.

Add ``rest_framework``, ``django_filters`` and ``drf_spectacular`` to
``INSTALLED_APPS`` and mount it with one include::

    path("api/", include("django_workflows.api.urls"))

Nothing outside this package imports Django REST framework, so the rest of
the app works without the extra. See ``docs/api.md``.
"""
