from atenlint.cli import main

raise SystemExit(main())
