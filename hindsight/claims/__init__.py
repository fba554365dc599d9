"""State claims: what a person says about where they live, work or study, whom they date, what they eat, which
club, car or phone they have. Retain extracts them and links a newer claim to the older one it supersedes; recall
reads the query's attribute and whether it asks about now or the past (docs/ARCHITECTURE.md, Knowledge updates).
No pipeline stage is imported here: retain and recall both use it."""
