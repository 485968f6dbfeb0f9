"""Reading instances and tasks as people see them: what the API, the admin and the
graph show (what an instance waits for, its live work, a task's inbox)."""
