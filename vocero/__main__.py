from vocero.app.cli import main

raise SystemExit(main())
