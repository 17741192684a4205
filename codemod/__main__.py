"""`python -m codemod`: the same CLI as the `codemod` script (runs the checkout it is started in)."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
