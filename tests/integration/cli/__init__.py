"""The command line and the embedded mode, as users run them."""
