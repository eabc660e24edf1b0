import sys

from carbon_ds.cli.main import main

sys.exit(main())
