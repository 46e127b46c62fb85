"""``python -m broker`` is the ``broker`` command."""

from broker.cli import main

raise SystemExit(main())
