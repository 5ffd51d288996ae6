"""jtk's version number, its one owner: the package metadata (``pyproject.toml``), ``jtk.__version__``, ``jtk info``
and every results manifest read it from here, so a platform module needs no import of the root package for it."""

__version__ = "0.1.0"
