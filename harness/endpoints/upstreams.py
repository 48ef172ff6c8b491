"""The real providers: where the model endpoint sends what it records or passes through.

Kept apart from :mod:`harness.endpoints.model` so that the commands offering
them as defaults (``harness serve``, ``harness proxy``) declare their options
without importing the endpoint itself.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ANTHROPIC_UPSTREAM", "OPENAI_UPSTREAM"]

#: Anthropic's API, as its SDK's base URL.
ANTHROPIC_UPSTREAM: Final = "https://api.anthropic.com"
#: OpenAI's API, with its /v1, as OPENAI_BASE_URL.
OPENAI_UPSTREAM: Final = "https://api.openai.com/v1"
