"""Forge objects on their way to the target: the appliers and their contract, the write
a source object becomes through the ObjectLinks (``mapping``), the links written from
verified outcomes and the planner's view of them, and a release asset's bytes in
flight. Git refs have their own applier (``stages/ref_applier.py``)."""
