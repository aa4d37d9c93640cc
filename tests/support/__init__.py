"""What the test packages share: the real ``asz`` run as a process, the roots, captures and
servers they are run against."""
