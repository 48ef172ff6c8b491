"""Every error the harness raises, in one tree.

Each error also subclasses the builtin it most resembles, so callers that
already catch ``LookupError`` or ``FileNotFoundError`` keep working. Errors
carry their context (file, line, field, turn) as attributes and render as a
single line, which the command line prints as is.

    HarnessError
    ├── ConfigError (ValueError)             bad settings, options or usage
    │   └── AgentContractError               an agent factory that breaks its contract
    ├── FixtureError
    │   ├── FixtureNotFound (FileNotFoundError)
    │   ├── FixtureExists (FileExistsError)  a fixture already there, not to be replaced
    │   ├── SchemaVersionError (ValueError)  a fixture written by another schema
    │   └── FixtureFormatError (ValueError)  invalid JSON or model, with file:line
    ├── RecordingError
    │   ├── Divergence (LookupError)         replay asked for something never recorded
    │   └── UnknownTool (LookupError)        a tool call for a tool nobody registered
    ├── LLMError
    │   └── LLMAPIError                      the provider answered with an error
    ├── StoreError
    │   └── StoreUnavailable (ConnectionError)
    ├── ClockError (RuntimeError)            misuse of a clock (time going backwards)
    │   └── RealWorkTimeout (TimeoutError)   real work in flight outlived its limit
    ├── ScenarioError (ValueError)           a scenario file that can't be run, with file:line
    ├── StepError (RuntimeError)             a step the agent's answers made impossible
    └── ChannelError
        ├── SignatureError (ValueError)      a webhook signature missing or wrong
        ├── HandshakeError                   the webhook failed the verification handshake
        └── DeliveryError                    a webhook could not be delivered
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AgentContractError",
    "ChannelError",
    "ClockError",
    "ConfigError",
    "DeliveryError",
    "Divergence",
    "FixtureError",
    "FixtureExists",
    "FixtureFormatError",
    "FixtureNotFound",
    "HandshakeError",
    "HarnessError",
    "LLMAPIError",
    "LLMError",
    "RealWorkTimeout",
    "RecordingError",
    "ScenarioError",
    "SchemaVersionError",
    "SignatureError",
    "StepError",
    "StoreError",
    "StoreUnavailable",
    "UnknownTool",
]


class HarnessError(Exception):
    """Root of every error the harness raises on purpose."""


class ConfigError(HarnessError, ValueError):
    """A setting, command-line option or argument that can't be used."""


class AgentContractError(ConfigError):
    """An agent factory that breaks its contract: a fresh agent per call, on the caller's loop."""


class FixtureError(HarnessError):
    """A fixture directory that can't be read or written."""

    def __init__(self, message: str, *, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)


class FixtureNotFound(FixtureError, FileNotFoundError):
    """The fixture directory, or a file it must hold, does not exist."""


class FixtureExists(FixtureError, FileExistsError):
    """A fixture directory that already holds a fixture (``found``), written without leave.

    The message names how to replace it: ``option`` (``overwrite=True`` by
    default; a command names its own, with :meth:`naming`).
    """

    def __init__(self, path: Path | str, found: str, *, option: str = "overwrite=True") -> None:
        super().__init__(
            f"{path}: already holds a fixture ({found}); pass {option} to replace it", path=path
        )
        self.found = found

    def naming(self, option: str) -> FixtureExists:
        """The same refusal, with ``option`` as the way to replace the fixture."""
        assert self.path is not None  # always given
        return FixtureExists(self.path, self.found, option=option)


class SchemaVersionError(FixtureError, ValueError):
    """A fixture written with a schema version this harness does not read."""

    def __init__(
        self, message: str, *, path: Path | str | None = None, found: object, supported: object
    ) -> None:
        super().__init__(message, path=path)
        self.found = found
        self.supported = supported


class FixtureFormatError(FixtureError, ValueError):
    """A fixture file holding invalid JSON or data of the wrong shape."""

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None):
        super().__init__(message, path=path)
        self.line = line


class RecordingError(HarnessError):
    """The recorders were asked for something they can't serve."""


class Divergence(RecordingError, LookupError):
    """A replayed request that matches no recorded request.

    ``differences`` lists, most telling first, what separates the request
    from the nearest recorded one (``"system prompt"``, ``"messages[3]"``...).
    """

    def __init__(self, message: str, *, key: str = "", differences: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.key = key
        self.differences = differences


class UnknownTool(RecordingError, LookupError):
    """A tool call for a tool that was never registered with the recorder."""


class LLMError(HarnessError):
    """A language-model call that failed."""


class LLMAPIError(LLMError):
    """The model provider answered with an error (after any retries)."""

    def __init__(
        self, message: str, *, status_code: int | None = None, error_type: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type


class StoreError(HarnessError):
    """A store operation that failed."""


class StoreUnavailable(StoreError, ConnectionError):
    """The store's server could not be reached, even after reconnecting.

    ``noted`` is true when the scenario in progress was told of it (see
    :mod:`harness.outages`), so its result reports it whoever catches it.
    """

    def __init__(self, message: str, *, noted: bool = False) -> None:
        super().__init__(message)
        self.noted = noted


class ClockError(HarnessError, RuntimeError):
    """A clock used in a way that would break time (for instance going backwards)."""


class RealWorkTimeout(ClockError, TimeoutError):
    """Real work (a model call, a store or HTTP request) outlived its limit on a virtual clock.

    ``work`` names what was in flight, with how long each had taken, in seconds.
    """

    def __init__(self, message: str, *, work: tuple[tuple[str, float], ...] = ()) -> None:
        super().__init__(message)
        self.work = work


class ScenarioError(HarnessError, ValueError):
    """A scenario file that can't be run; names the file, line and field."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.line = line
        self.field = field


class StepError(HarnessError, RuntimeError):
    """A scenario step that can't be played because of what the agent did.

    Tapping a button when the agent offered none is the agent's failure, not
    the scenario's: the runner reports it as a failed step and still checks
    the invariants over the conversation so far.
    """


class ChannelError(HarnessError):
    """A channel could not carry a conversation to the agent or back."""


class SignatureError(ChannelError, ValueError):
    """A webhook body whose X-Hub-Signature-256 is missing or does not match."""


class HandshakeError(ChannelError):
    """The agent's webhook answered the verification handshake wrongly."""


class DeliveryError(ChannelError):
    """A webhook delivery that could not be made at all."""
