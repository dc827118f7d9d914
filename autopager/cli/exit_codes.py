"""A command's exit status: 0, 2 for bad input (ConfigError), 1 for a failed study or run (StudyError), each
with one line on stderr."""
from __future__ import annotations

import sys
from typing import Callable

from autopager.errors import ConfigError, StudyError


def exit_status(action: Callable[[], int]) -> int:
    """Run a command's action: bad input is status 2, a failed study or run 1, each with one message."""
    try:
        return action()
    except ConfigError as error:
        print(f"autopager: error: {error}", file=sys.stderr)
        return 2
    except StudyError as error:
        print(f"autopager: {error}", file=sys.stderr)
        return 1
