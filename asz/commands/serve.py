"""``asz serve``: the local, read-only web application over the root (``asz.web``).

This module checks what the command line asks for before anything is served: the listen
address, the token (a listen beyond loopback without one does not start), the root; then
binds and serves. See ``docs/web.md``.

Beyond loopback, a local root is served through the redaction policy (``[redact]``): every
body and transcript line as the archive would hold it, markers in place of what was found
(``asz.archive.redacting``). On loopback, the person at the machine sees the root exact. An
archive (``--root s3://...``) is served as it is: what a push sent is redacted already.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_OK, UsageError
from asz.output import LOG_FORMATS

if TYPE_CHECKING:
    from collections.abc import Callable

    from asz.store import Store
    from asz.web.library import Tables

__all__ = ["DEFAULT_LISTEN", "SUMMARY", "add_arguments", "run"]

SUMMARY = "serve a local, read-only web view of the root: sessions, calls, requests, bodies"
DEFAULT_LISTEN = "127.0.0.1:9478"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=DEFAULT_LISTEN,
        help=f"where to serve (default: {DEFAULT_LISTEN}; port 0 picks a free one); an "
        "address beyond loopback needs a token (docs/web.md)",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="a private file (mode 0600) holding the token every request must then carry "
        "(default: $ASZ_WEB_TOKEN, else $XDG_CONFIG_HOME/asz/web-token when it exists)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the server may be reached by besides its listen host, localhost "
        "and IP addresses (requests naming any other Host are refused); repeatable (default: "
        "none)",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="auto",
        help="the log's lines: console lines for people, JSON lines for machines (default: "
        "auto, console on a terminal)",
    )


def _opened(config: Config, redact: bool) -> Store:
    """The root to serve, opened so that nothing is written to it: a directory on a backend
    that refuses every write (read through the redaction policy with ``redact``), or an
    archive (whose backend writes only its local cache)."""
    from asz.archive.redacting import redacting_store
    from asz.commands.args import open_root, root_directory
    from asz.web.readonly import open_readonly

    if config.root_url:
        return open_root(config)
    root = root_directory(config)
    store = open_readonly(root)
    if not redact:
        return store
    try:
        redacted = redacting_store(config, root, store)
    except ValueError as err:
        raise UsageError(f"redaction: {err}") from None
    return store if redacted is None else redacted


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.daemon.http import ListenError, parse_listen
    from asz.logs import configure_logging
    from asz.view.prices import price_table
    from asz.web.access import AccessError, access_for, is_loopback, load_token
    from asz.web.library import Library
    from asz.web.server import bind, serve

    try:
        host, port = parse_listen(args.listen)
    except ListenError as err:
        raise UsageError(str(err)) from None
    store = _opened(config, redact=not is_loopback(host))
    try:
        token = load_token(os.environ, args.token_file)
        access_for(host, port, token, tuple(args.allow_host))
    except AccessError as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    try:
        sock = bind(host, port)
    except OSError as err:
        print(f"asz: cannot listen on {args.listen}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    access = access_for(host, sock.getsockname()[1], token, tuple(args.allow_host))
    log = configure_logging(sys.stdout, args.log_format)
    prices = price_table(config.prices)
    library = Library(store, prices, _tables(config, prices.fingerprint()))
    serve(library, access, sock, log)
    return EXIT_OK


def _tables(config: Config, priced_by: str) -> Callable[[list[str]], Tables | None] | None:
    """What reads the analytics tables for each listing, when ``[analytics] url`` names
    them."""
    if not config.analytics.url:
        return None
    from asz.analytics.tables import table_facts

    return lambda ids: table_facts(config, ids, priced_by)
