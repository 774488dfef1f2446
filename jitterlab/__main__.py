from jitterlab.cli import main

raise SystemExit(main())
