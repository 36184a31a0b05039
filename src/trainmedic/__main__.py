"""`python -m trainmedic` runs the same entry point as the console script."""

import sys

from trainmedic.cli import main

sys.exit(main())
