"""A django-q2 task that does nothing: the baseline."""


def noop() -> None:
    return None
