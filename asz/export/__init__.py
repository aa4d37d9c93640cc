"""Export of what asz joined to the stacks teams already watch: every model call as an
OpenTelemetry GenAI span over OTLP/HTTP (``docs/otel.md``).

Beside the view, the web view and the archive: it reads the root through the store and the
view (the view document and the cache report) and never lands anything; the only files it
writes are its cursors and its lock under ``_state/`` (:mod:`.cursor`). The command
(``asz export otlp``) and the service's export loop both run :class:`.run.SpanExport`.
"""
