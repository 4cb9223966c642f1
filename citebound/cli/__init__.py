"""The ``citebound`` command line: one module per subcommand, :mod:`~citebound.cli.main` dispatches."""
