"""``python3 -m ctxkeeper``: the CLI from a plain checkout."""

from ctxkeeper.cli.app import main

raise SystemExit(main())
