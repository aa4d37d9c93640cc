"""The OTLP export: spans, the receiver, Arize Phoenix and the service task."""
