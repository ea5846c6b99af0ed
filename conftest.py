# The plugin under test registers itself through its pytest11 entry point; the tests use
# pytester to run it in isolated inner sessions.
pytest_plugins = ["pytester"]
