import sys

from carbon_ds.demo.quickstart import main

sys.exit(main())
