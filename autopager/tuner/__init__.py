"""The tuner: a study's configuration, search space, strategies, launchers, its table of trials, and the
search, confirmation and profile saving over them. Uses the core and autopager.run; knows no analysis or CLI."""
