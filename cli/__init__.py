"""The `congruency` command line: the top layer, one module per subcommand."""
