"""Classroom play mode: a person works an incident at the terminal (``srezero play TASK``).

:mod:`.session` holds the logic (actions, help, hints, the record) with no terminal in it, so it is
testable and reusable; :mod:`.shell` is the ``cmd``/``readline`` front end (prompt with budgets,
completion, history, colour); :mod:`.debrief` renders what happened once the episode ends.
"""
