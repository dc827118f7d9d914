"""The error for bad input: a setting, name or file the user gave. The CLI prints it and exits with status 2."""


class ConfigError(Exception):
    """A clear message naming the bad thing and, where there is one, the fix."""


class StudyError(Exception):
    """A study or run cannot go on: the workload's preparation or its defaults' run failed. Exit status 1."""
