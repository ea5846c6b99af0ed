"""pytest-gpuperf: GPU performance regression testing for pytest.

Importing the package is cheap: torch, transformers and NVML are imported only when a GPU
feature is used.

PYTEST_DONT_REWRITE: the plugin holds no test assertions to rewrite.
"""

__version__ = "0.1.0"
