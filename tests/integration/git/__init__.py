"""Git data end to end: refs, LFS, wikis, hooks, over every transport."""
