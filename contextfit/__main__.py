from contextfit.views.cli import main
import sys

sys.exit(main())
