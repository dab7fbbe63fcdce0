from kueuetop.cli import main

raise SystemExit(main())
