"""Broken workflow modules, for the registry and system-check tests.

Each module fails in its own way when it is imported (a definition error at
construction or at registration). Nothing imports them but those tests, through
``registry.autodiscover("broken.<name>")``.
"""
