import contextlib

# pytester's inline sessions restore sys.modules after each run; a torch imported inside
# one and dropped afterwards cannot be imported again in the same process (it crashes).
# Importing it once here keeps it out of those snapshots.
with contextlib.suppress(ImportError):
    import torch  # noqa: F401
