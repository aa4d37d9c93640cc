"""Call facts as Parquet tables, for team analytics on an engine made for it.

Every model call, every session and every cache break of a root become rows of three typed
tables (:mod:`.schema`), built from the same cache report ``asz cache`` prints (:mod:`.rows`)
and written, partitioned by UTC day, to a directory or a bucket (:mod:`.write`, :mod:`.place`,
:mod:`.names`), a pass at a time, each row once (:mod:`.state`). ``asz sql`` reads them with
DuckDB (:mod:`.query`), ``asz cache`` and the web view take a session's figures from them
while they hold for its landed files (:mod:`.tables`), and Athena, Trino or Spark read the same
prefix. See docs/analytics.md.
"""
