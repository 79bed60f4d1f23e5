import sys

from kafka_mc.cli import main

sys.exit(main())
