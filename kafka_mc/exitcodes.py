"""Exit codes, compatible with TLC's where TLC has one."""

OK = 0  # complete, no violation, every witness reached
FAILED = 1  # a replay or reproduction does not match what its scenario documents
USAGE = 2  # the command line itself is malformed
VIOLATION = 12  # an invariant is violated (TLC: safety violation)
WITNESS_UNREACHED = 13  # a `sometimes` property was never reached in a complete run
INCOMPLETE = 75  # a state or time budget stopped the run: no verdict (EX_TEMPFAIL)
BAD_SPEC = 150  # a scenario or trace file cannot be used (TLC: spec error)
BAD_INPUT = 151  # an option value or output location is not allowed (TLC: config error)
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): a partial run, no verdict
INTERNAL = 255
