"""Lets ``python -m asz`` behave like the ``asz`` console script."""

from asz.commands import main

raise SystemExit(main())
