from contextfit.cli import main
import sys

sys.exit(main())
