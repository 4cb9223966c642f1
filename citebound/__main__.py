"""``python -m citebound``: the command line."""
import sys

from citebound.cli.main import main

sys.exit(main())
