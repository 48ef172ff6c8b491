"""The harness core: trace, clock, LLM seam, recorders, fixtures and store.

It knows nothing about WhatsApp; channels and agents build on it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
