"""``asz push``: one push of the root's landed files into the team archive (``[archive] url``).

The push lives in :mod:`asz.archive.push`; this module checks there is an archive to push to,
runs one pass under the push lock, and turns its counts into words (or ``--json``) and the
exit code ``asz collect --once`` would give: 0 complete, 1 when something failed or conflicts.
``--dry-run`` lists what would go and sends nothing (it reads no bucket, so it needs no
credentials): what leaves the machine, seen before the first push, and what the redaction
policy (``[redact]``) replaces in it, by rule and count per session, never a value. Making
that count makes the redacted files under the root's private ``_state``, which the push
then sends as they are.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from asz.commands.args import local_root
from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_OK, UsageError
from asz.words import count, listing, size

if TYPE_CHECKING:
    from pathlib import Path

    from asz.archive.bucket import Bucket
    from asz.archive.prune import Pruned
    from asz.archive.push import Pusher
    from asz.archive.push_tally import PushTally
    from asz.store import Store

__all__ = ["SUMMARY", "add_arguments", "prune_line", "run"]

SUMMARY = "push every landed file of the admitted sessions to the team archive ([archive] url)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the pass's counts as JSON")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list every object that would be created (files, claims, marker), with its "
        "size, and the sessions left out and why; send nothing",
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="after the push, remove from the archive the objects a repack replaced, once "
        "the generation that replaced them is [archive] prune_after seconds old",
    )
    parser.add_argument(
        "--reredact",
        action="store_true",
        help="push the sessions the archive holds under another redaction policy (or raw) "
        "again, re-redacted under this one as a new generation beside the old objects, "
        "which are reported for --prune, never overwritten",
    )
    parser.add_argument(
        "--relist",
        action="store_true",
        help="forget the local record of what was pushed and rebuild it by listing the "
        "archive (what is there with this root's bytes is not sent again)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.adapters.session_filter import landed_admits
    from asz.archive import open_bucket
    from asz.archive.push import PushBusy, Pusher, push_lock
    from asz.archive.push_tally import push_line
    from asz.archive.redacted import redacted_root
    from asz.locations import ArchiveUrl
    from asz.output import print_json
    from asz.store import UnsafeRoot, open_store

    root = local_root(config, "asz push")
    if not config.archive.url:
        raise UsageError("no archive to push to: set url in the [archive] table of the config")
    if not root.is_dir():
        raise UsageError(f"there is no storage root at {root}")
    bucket = open_bucket(config.archive.url, config.archive)
    store = open_store(root)
    try:
        # The redaction key is kept under _state: made only once the lock has found the
        # root safe to write into (no link, no other user's directory).
        with push_lock(root):
            try:
                redacted = redacted_root(config, root, store)
            except ValueError as err:
                raise UsageError(f"redaction: {err}") from None
            pusher = Pusher(
                root,
                store,
                landed_admits(config, store),
                ArchiveUrl.parse(config.archive.url),
                bucket,
                workers=config.archive.workers,
                redacted=redacted,
            )
            with _stopped_by_signals(pusher) as signalled:
                tally = pusher.run(dry_run=args.dry_run, relist=args.relist, reredact=args.reredact)
                pruned = _prune(root, config, bucket) if args.prune and not args.dry_run else None
    except (PushBusy, UnsafeRoot) as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print_json(
            {**tally.as_dict(), "would_push": [list(item) for item in tally.would_push]}
            if args.dry_run
            else {**tally.as_dict(), **({"pruned": pruned.as_dict()} if pruned else {})}
        )
    elif args.dry_run:
        for path, length in tally.would_push:
            print(f"{size(length):>10}  {path}")
        total = sum(length for _path, length in tally.would_push)
        from asz.store import parse_extent

        # What stands for a landed file: not the archive's own objects, nor an extent.
        files = sum(
            1
            for path, _length in tally.would_push
            if not path.startswith("_") and parse_extent(path.rsplit("/", 1)[-1]) is None
        )
        print(
            f"would push {count(files, 'landed file')} and create "
            f"{count(len(tally.would_push), 'object')} ({size(total)}) in {tally.archive}"
        )
        for session in tally.left_out:
            print(f"left out: {session}: {_why_left_out(config, store, session)}")
        for session in tally.not_judged:
            print(f"waiting: {session}: no project directory is known for it yet")
        _say_redactions(tally)
        if tally.rebuilt:
            print(
                "there is no local record of earlier pushes: a push lists the archive first "
                "and sends none of these that are there already"
            )
    else:
        print(push_line(tally))
    if not args.json:
        _say_reredacted(tally, config)
    if pruned is not None and not args.json:
        print(prune_line(pruned))
    _say_trouble(tally)
    for error in pruned.errors if pruned is not None else []:
        print(f"asz: prune: {error}", file=sys.stderr)
    if tally.interrupted and signalled:
        return 128 + signalled[0]
    return EXIT_OK if tally.complete and not (pruned and pruned.errors) else EXIT_FAILED


def _prune(root: Path, config: Config, bucket: Bucket) -> Pruned:
    """The prune of the sessions this root claimed in the archive (``asz.archive.prune``)."""
    from asz.archive.prune import prune
    from asz.archive.record import PushRecord
    from asz.locations import ArchiveUrl

    url = ArchiveUrl.parse(config.archive.url)
    record = PushRecord.for_root(root, str(url), bucket.endpoint)
    pruned = prune(bucket, url, sorted(record.claimed), config.archive.prune_after)
    if not record.rebuilt:  # a record started again holds none of them
        record.forget(pruned.removed)
        record.compact()
    return pruned


def prune_line(pruned: Pruned) -> str:
    """A prune in words."""
    said = f"pruned {count(pruned.objects, 'replaced object')} ({size(pruned.bytes)})"
    if pruned.waiting:
        said += f"; {count(pruned.waiting, 'object')} left until their generation is older"
    return said


@contextmanager
def _stopped_by_signals(pusher: Pusher) -> Iterator[list[int]]:
    """Ctrl-C (or SIGTERM) ends the push within a second or two: uploads in flight finish or
    are abandoned, what went is recorded, and the command says what is left and exits
    128 + the signal's number, without a traceback. The list names the signal received."""
    received: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        received.append(signum)
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        pusher.stop(f"stopped by {name}")

    before = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _why_left_out(config: Config, store: Store, session: str) -> str:
    """Which of the session filter's lists leaves ``session`` out, and its directory."""
    from asz.adapters.session_filter import Matcher

    facts = store.open_session(session).facts()
    dirs = [facts.primary_dir] if facts.primary_dir else sorted(facts.project_dirs)
    named = ", ".join(dirs) or "no project directory"
    included = Matcher(config.sessions.include, ())
    if config.sessions.include and not any(
        included.passes(directory, lambda: set(facts.cwds)) for directory in dirs
    ):
        return f"{named}: not matched by sessions.include"
    return f"{named}: matched by sessions.exclude"


def _say_redactions(tally: PushTally) -> None:
    """What the policy replaces in what would go, by rule, per session: never a value."""
    if not tally.policy:
        print("redaction is off ([redact] enabled = false): the landed files would go raw")
        return
    for session, rules in sorted(tally.redacted_by_session.items()):
        said = ", ".join(f"{rule} {n}" for rule, n in rules.items()) or "nothing"
        print(f"redacted in {session}: {said}")


def _say_reredacted(tally: PushTally, config: Config) -> None:
    """The sessions re-redacted, and the objects left for ``--prune``: never overwritten."""
    for session in tally.reredacted:
        print(f"re-redacted {session}: its files go again as a new generation beside the old")
    if tally.replaced:
        print(
            f"{count(len(tally.replaced), 'object')} replaced, counted by no reader now: "
            "`asz push --prune` removes them once their generation is [archive] prune_after "
            f"({config.archive.prune_after:g} s) old:"
        )
        for key in tally.replaced:
            print(f"  replaced: {key}")


def _say_trouble(tally: PushTally) -> None:
    from asz.archive.push_tally import stop_line

    if tally.stopped:
        print(f"asz: {stop_line(tally)}", file=sys.stderr)
    for key in tally.conflicts:
        print(f"asz: conflict: {key} holds other bytes than this root's file", file=sys.stderr)
    if tally.held_elsewhere:
        print(
            f"asz: {listing(tally.held_elsewhere)}: held by another root too (its claim in the "
            "archive names another first landed file); none of this root's files of it are "
            "pushed: leave it out with the session filter, or keep it local",
            file=sys.stderr,
        )
    for error in tally.errors:
        print(f"asz: error: {error}", file=sys.stderr)
    for failed in tally.redaction_failed:
        print(
            f"asz: redaction failed: {failed}; nothing of it, or of its session after it, "
            "is pushed (never raw)",
            file=sys.stderr,
        )
    if tally.other_policy:
        sessions = sorted({path.split("/", 1)[0] for path in tally.other_policy})
        differ = set(tally.would_differ) & set(tally.other_policy)
        print(
            f"asz: {count(len(tally.other_policy), 'file')} of {listing(sessions)} went to the "
            f"archive under another redaction policy (or raw); {len(differ)} "
            "would now differ; nothing more of those sessions is pushed until "
            "`asz push --reredact` (which adds them re-redacted beside the old objects):",
            file=sys.stderr,
        )
        for path in tally.other_policy:
            said = "would differ" if path in differ else "the same records, another policy"
            print(f"asz:   {path} ({said})", file=sys.stderr)
