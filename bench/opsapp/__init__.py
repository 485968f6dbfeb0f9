"""The no-op workflow and the no-op django-q2 task that ``bench/operations.py`` measures."""
