"""The ``faithkit`` command line, end to end through ``faithkit.cli.main`` (and subprocesses where a signal or a
second process is the point)."""
