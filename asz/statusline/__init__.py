"""``asz statusline``: the prompt cache of the session at hand, in Claude Code's status line.

Claude Code runs the configured command after each message, with the session's facts as JSON
on stdin (:mod:`.status_input`), and shows the first line it prints. The figures come from the
session's transcripts, read only as far as they grew since the last run (:mod:`.tail`, with
what was folded kept in a small private file, :mod:`.state`); the cause of a break comes from
the cache report the service keeps, when it has one (:mod:`.causes`). :mod:`.line` words the
line, :mod:`.settings` installs it in Claude Code's ``settings.json``. See
``docs/statusline.md``.

Nothing here imports the store, the command table or the logging setup unless it needs them:
the command is started for every message, and its start is most of its cost.
"""
