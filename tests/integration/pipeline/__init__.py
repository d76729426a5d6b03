"""The execution rules under faults: leases, fences, recovery, write guards, properties."""
