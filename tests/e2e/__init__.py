"""The real ``asz`` across packages: the command line, crashes, faults, bad input, security."""
