"""The shared base every step imports: configuration, terminal output, table schemas and
the method's parameters. It imports nothing else of the project."""
