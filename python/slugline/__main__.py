"""`python -m slugline`: the `slugline` command."""

import sys

from slugline.cli import main

if __name__ == "__main__":
    sys.exit(main())
