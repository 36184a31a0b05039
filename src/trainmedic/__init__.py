"""trainmedic: decision trees that take a broken training job to the right fix."""

__version__ = "0.1.0"
