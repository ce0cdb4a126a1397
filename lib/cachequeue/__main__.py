"""`python -m cachequeue ...`: the same command line as the `cachequeue` console script."""

from cachequeue.cli import main

raise SystemExit(main())
