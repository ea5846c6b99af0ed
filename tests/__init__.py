"""The plugin's tests.

PYTEST_DONT_REWRITE: this empty package module has no assert to rewrite. An editable
install or a build leaves pytest_gpuperf.egg-info in the checkout, whose file list (the
sdist's: MANIFEST.in ships the tests) names this package as the plugin's, so every pytester
run here would ask to rewrite it and warn that it is already imported.
"""
