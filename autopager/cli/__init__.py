"""The ``autopager`` command: dispatch and exit codes over every layer below (autopager.cli.main)."""
