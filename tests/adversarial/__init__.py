"""The adversarial suite (issue L): each module covers one class of failure that docs/GUARANTEES.md promises to
survive. The quick set runs in CI; HINDSIGHT_FULL_RELIABILITY=1 runs the long set."""
