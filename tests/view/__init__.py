"""Reading a landed root: the view document, joins, shapes, the cache report and sessions."""
