"""The API's resources: Bindings, Runs, items, events and streams, the overview, reconcile."""
