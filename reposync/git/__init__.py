"""Native Git transport (the ``git`` binary); Git data never passes through Python."""
