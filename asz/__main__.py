"""Lets ``python -m asz`` behave like the ``asz`` console script."""

from asz.launch import main

raise SystemExit(main())
