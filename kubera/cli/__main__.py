"""`python -m kubera.cli ARGS`: the same as the `kubera` console script."""

import sys

from kubera.cli.main import main

sys.exit(main())
