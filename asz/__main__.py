"""Lets ``python -m asz`` behave like the ``asz`` console script."""

from asz.cli import main

raise SystemExit(main())
