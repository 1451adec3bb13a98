"""`python -m hierbench.cli`: the `hierbench` command."""

from hierbench.cli import main

raise SystemExit(main())
