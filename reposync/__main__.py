import sys

from reposync.cli import main

sys.exit(main())
