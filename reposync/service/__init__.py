"""Domain operations. The only package that writes Run, RunItem and Binding state."""
