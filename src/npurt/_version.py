"""npurt's version, in a module of its own so that every layer can read it without importing the top-level
package's lazy exports (a base module, like `npurt.errors`)."""

__version__ = "0.1.0"
