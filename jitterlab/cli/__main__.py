from jitterlab.cli.main import main

raise SystemExit(main())
