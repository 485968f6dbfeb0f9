"""The schedules ``bench/schedules.py`` measures (``bench/settings_schedules.py`` installs it)."""
