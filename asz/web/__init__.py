"""``asz serve``: a local, read-only web application over a storage root.

It shows what the other commands show (the sessions, each session's timeline and cache
report, each call's request part by part and its difference from the request before it,
the exact bytes of every body) as server-rendered pages. It reads the root only through
``asz.store``, opened on a backend that refuses every write (:mod:`.readonly`), and every
request passes :mod:`.guard` first: the Host header, the token, the methods and the
security headers. See ``docs/web.md`` and the web section of ``docs/security.md``.
"""
