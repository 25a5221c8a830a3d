"""One module per subcommand: ``populate_parser`` declares its options, ``run`` does the work."""
