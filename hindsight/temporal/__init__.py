"""Time expressions: found in text and resolved against a reference date into day intervals, for retain (when a
fact happened) and recall (the range a query asks about). `expressions` is the entry point."""
