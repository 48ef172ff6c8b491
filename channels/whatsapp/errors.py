"""Meta's WhatsApp error codes, the shapes they travel in, and one exception per code.

An error reaches a bot two ways: synchronously, as the Graph API error
envelope ``{"error": {...}}`` answering a send, or asynchronously, as an error
object inside a ``failed`` status (or an inbound message).
:mod:`channels.whatsapp.error_codes` describes each code Meta documents (its
HTTP status and delivery follow the facts document where Meta is silent);
``error_envelope`` and ``error_object`` build the two shapes; ``graph_error``
returns the named exception for a code, ready to raise, and each exception
renders both shapes.

    harness.exceptions.ChannelError
    └── GraphAPIError                    any code; renders both shapes
        ├── AuthError                    190, 0
        ├── PermissionDenied             10, 200
        ├── InvalidParameter             100
        │   └── NoSuchObject             100, subcode 33 (no such id, or not this method)
        ├── UnknownPath                  2500
        ├── PolicyBlocked                368
        ├── RateLimited
        │   ├── AppRateLimited           4
        │   ├── WabaRateLimited          80007
        │   ├── ThroughputLimited        130429
        │   ├── SpamRateLimited          131048
        │   └── PairRateLimited          131056
        ├── GenericError                 131000
        ├── ParameterMissing             131008
        ├── ParameterInvalid             131009
        ├── RecipientIsSender            131021 (the business blocking itself)
        ├── ServiceUnavailable           131016
        ├── Undeliverable                131026
        ├── ReEngagementRequired         131047
        ├── EcosystemLimited             131049
        ├── UnsupportedMessageType       131051
        ├── MediaDownloadError           131052
        ├── MediaUploadError             131053
        ├── AccountInMaintenance         131057
        ├── MessageUnavailable           131060
        ├── RecipientNotSupported        131062
        ├── TemplateParamMismatch        132000
        ├── TemplateNotFound             132001
        ├── TemplateParamFormat          132012
        ├── TemplatePaused               132015
        ├── TemplateDisabled             132016
        ├── PinMismatch                  133005 (registering with another PIN)
        ├── NotRegistered                133010 (a send from a deregistered number)
        ├── BlockUsersFailed             139100, with the block call's lists
        ├── BlocklistFull                139101
        └── BlocklistError               139103
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import TypeAdapter

from channels.whatsapp.error_codes import ERROR_DOCS_URL, Delivery, spec_for
from channels.whatsapp.payloads import MetaModel, validate
from harness.exceptions import ChannelError
from harness.trace import ErrorInfo

__all__ = [
    "GRAPH_DOCS_URL",
    "NO_SUCH_OBJECT_SUBCODE",
    "AccountInMaintenance",
    "AppRateLimited",
    "AuthError",
    "BlockUsersFailed",
    "BlocklistError",
    "BlocklistFull",
    "EcosystemLimited",
    "ErrorData",
    "ErrorObject",
    "GenericError",
    "GraphAPIError",
    "GraphError",
    "GraphErrorEnvelope",
    "InvalidParameter",
    "MediaDownloadError",
    "MediaUploadError",
    "MessageUnavailable",
    "NoSuchObject",
    "NotRegistered",
    "PairRateLimited",
    "ParameterInvalid",
    "ParameterMissing",
    "PermissionDenied",
    "PinMismatch",
    "PolicyBlocked",
    "RateLimited",
    "ReEngagementRequired",
    "RecipientIsSender",
    "RecipientNotSupported",
    "ServiceUnavailable",
    "SpamRateLimited",
    "TemplateDisabled",
    "TemplateNotFound",
    "TemplateParamFormat",
    "TemplateParamMismatch",
    "TemplatePaused",
    "ThroughputLimited",
    "Undeliverable",
    "UnknownPath",
    "UnsupportedMessageType",
    "WabaRateLimited",
    "error_envelope",
    "error_object",
    "graph_error",
]


class ErrorData(MetaModel):
    """The ``error_data`` object: Meta advises keying on ``details`` (and the code)."""

    messaging_product: str | None = None
    details: str | None = None


class ErrorObject(MetaModel):
    """An error inside a webhook: a ``failed`` status, a message, or ``value.errors``."""

    code: int
    title: str | None = None
    message: str | None = None
    error_data: ErrorData | None = None
    href: str | None = None


class GraphError(MetaModel):
    """The object inside the Graph API error envelope."""

    message: str
    type: str | None = None
    code: int
    error_subcode: int | None = None
    error_data: ErrorData | None = None
    fbtrace_id: str | None = None


class GraphErrorEnvelope(MetaModel):
    """A Graph API error response body: ``{"error": {...}}``."""

    error: GraphError


_ENVELOPE = TypeAdapter(GraphErrorEnvelope)

GRAPH_DOCS_URL = "https://developers.facebook.com/docs/graph-api"
"""Where Graph's own errors send the reader."""


def error_object(
    code: int,
    *,
    details: str | None = None,
    title: str | None = None,
    href: str | None = None,
    with_message: bool = True,
) -> ErrorObject:
    """Build the error object of a failed status or an inbound message.

    Defaults come from ``ERROR_CODES``. Failed statuses carry ``href``
    (pass ``ERROR_DOCS_URL``); Meta's ``value.errors`` sample has no ``message``
    (pass ``with_message=False``).
    """
    spec = spec_for(code)
    title = spec.title if title is None else title
    return ErrorObject(
        code=code,
        title=title,
        message=title if with_message else None,
        error_data=ErrorData(details=spec.details if details is None else details),
        href=href,
    )


def error_envelope(
    code: int,
    *,
    details: str | None = None,
    message: str | None = None,
    error_subcode: int | None = None,
    fbtrace_id: str | None = None,
    error_type: str = "OAuthException",
    with_data: bool = True,
) -> GraphErrorEnvelope:
    """Build the Graph API error body answering a send that failed with ``code``.

    ``with_data=False`` leaves ``error_data`` out, as Graph's own errors
    (an unknown path or object) do: only WhatsApp's errors carry it.
    """
    spec = spec_for(code)
    data = None
    if with_data:
        data = ErrorData(
            messaging_product="whatsapp", details=spec.details if details is None else details
        )
    return GraphErrorEnvelope(
        error=GraphError(
            message=spec.graph_message if message is None else message,
            type=error_type,
            code=code,
            error_subcode=error_subcode,
            error_data=data,
            fbtrace_id=fbtrace_id,
        )
    )


class GraphAPIError(ChannelError):
    """An error Meta reports with a code; subclasses name the codes bots handle.

    ``GraphAPIError(131047)`` and ``ReEngagementRequired()`` describe the same
    error, but only ``graph_error(131047)`` picks the named class for you.
    Defaults for title, details and HTTP status come from ``ERROR_CODES``.
    """

    codes: ClassVar[tuple[int, ...]] = ()
    """The codes this class stands for; the first is its default."""

    error_type: ClassVar[str] = "OAuthException"
    """The envelope's ``type``: Graph's own errors about a path or an object differ."""

    with_data: ClassVar[bool] = True
    """Whether the envelope carries ``error_data`` (WhatsApp's errors do, Graph's own don't)."""

    _by_code: ClassVar[dict[int, type[GraphAPIError]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for code in cls.__dict__.get("codes", ()):  # a class naming codes of its own
            GraphAPIError._by_code[code] = cls

    def __init__(
        self,
        code: int | None = None,
        *,
        details: str | None = None,
        message: str | None = None,
        title: str | None = None,
        http_status: int | None = None,
        error_subcode: int | None = None,
        fbtrace_id: str | None = None,
    ) -> None:
        if code is None:
            if not self.codes:
                raise TypeError(f"{type(self).__name__} needs an error code")
            code = self.codes[0]
        elif self.codes and code not in self.codes:
            raise ValueError(f"{type(self).__name__} stands for codes {self.codes}, not {code}")
        spec = spec_for(code)
        self.code = code
        self.title = spec.title if title is None else title
        self.details = spec.details if details is None else details
        self.message = spec.graph_message if message is None else message
        self.http_status = spec.http_status if http_status is None else http_status
        self.delivery: Delivery = spec.delivery
        self.error_subcode = error_subcode
        self.fbtrace_id = fbtrace_id
        super().__init__(f"{self.message}: {self.details}")

    def to_envelope(self) -> dict[str, Any]:
        """The Graph API error body for this error, as a JSON-ready dict."""
        return error_envelope(
            self.code,
            details=self.details,
            message=self.message,
            error_subcode=self.error_subcode,
            fbtrace_id=self.fbtrace_id,
            error_type=self.error_type,
            with_data=self.with_data,
        ).to_dict()

    def to_error_info(self) -> ErrorInfo:
        """This error as the trace records it (code, title, message, details, HTTP status)."""
        return ErrorInfo(
            code=self.code,
            title=self.title,
            message=self.message,
            details=self.details,
            http_status=self.http_status,
        )

    def to_error_object(self, *, href: str | None = ERROR_DOCS_URL) -> ErrorObject:
        """This error as it appears in a ``failed`` status webhook."""
        return error_object(self.code, details=self.details, title=self.title, href=href)

    @classmethod
    def from_envelope(
        cls, body: Mapping[str, Any], *, http_status: int | None = None
    ) -> GraphAPIError:
        """Rebuild the named exception from a Graph API error body.

        Raises ``PayloadError`` when ``body`` is not a Graph error envelope.
        """
        error = validate(_ENVELOPE, body, what="Graph API error body").error
        # Graph's own errors carry no error_data: their message is all there is.
        details = error.error_data.details if error.error_data else error.message
        if error.code == NoSuchObject.codes[0] and error.error_subcode == NO_SUCH_OBJECT_SUBCODE:
            return NoSuchObject(
                message=error.message, http_status=http_status, fbtrace_id=error.fbtrace_id
            )
        return graph_error(
            error.code,
            details=details,
            message=error.message,
            http_status=http_status,
            error_subcode=error.error_subcode,
            fbtrace_id=error.fbtrace_id,
        )

    @classmethod
    def from_error_object(cls, error: ErrorObject) -> GraphAPIError:
        """Rebuild the named exception from an error object in a webhook."""
        return graph_error(
            error.code,
            details=error.error_data.details if error.error_data else None,
            title=error.title,
        )


def graph_error(
    code: int,
    *,
    details: str | None = None,
    message: str | None = None,
    title: str | None = None,
    http_status: int | None = None,
    error_subcode: int | None = None,
    fbtrace_id: str | None = None,
) -> GraphAPIError:
    """Return the named exception for ``code`` (``GraphAPIError`` itself if it has no name)."""
    cls = GraphAPIError._by_code.get(code, GraphAPIError)
    return cls(
        code,
        details=details,
        message=message,
        title=title,
        http_status=http_status,
        error_subcode=error_subcode,
        fbtrace_id=fbtrace_id,
    )


class AuthError(GraphAPIError):
    """The access token is missing, invalid or expired (190; 0 for other auth failures).

    Graph's own error: no ``error_data`` (a recorded answer to a bad token has none).
    """

    codes = (190, 0)
    with_data = False


class PermissionDenied(GraphAPIError):
    """The app lacks a permission the request needs (10, 200)."""

    codes = (10, 200)


class InvalidParameter(GraphAPIError):
    """A request field that is unknown, misspelled or of the wrong shape (100)."""

    codes = (100,)


NO_SUCH_OBJECT_SUBCODE = 33
"""Graph's ``error_subcode`` for an id it can't find, or that does not take the method."""


class NoSuchObject(InvalidParameter):
    """Graph's answer for an object id it cannot use this way (100, subcode 33).

    The id names nothing the token may use (a wrong ``phone_number_id`` is the
    usual cause), or the object does not take the request's method. Graph
    answers it as a ``GraphMethodException``, without ``error_data``.
    """

    error_type = "GraphMethodException"
    with_data = False

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("error_subcode", NO_SUCH_OBJECT_SUBCODE)
        super().__init__(**kwargs)

    @classmethod
    def about(cls, method: str, object_id: str) -> NoSuchObject:
        """The error for a ``method`` request on ``object_id``, in Graph's words."""
        message = (
            f"Unsupported {method.lower()} request. Object with ID '{object_id}' does not exist,"
            " cannot be loaded due to missing permissions, or does not support this operation."
            f" Please read the Graph API documentation at {GRAPH_DOCS_URL}"
        )
        return cls(message=message, details=message)


class UnknownPath(GraphAPIError):
    """A path with more than an object and its edge, or no version before them (2500)."""

    codes = (2500,)
    with_data = False

    @classmethod
    def after(cls, components: str) -> UnknownPath:
        """The error for the path ``components`` Graph could not place, in Graph's words."""
        message = f"Unknown path components: {components}"
        return cls(message=message, details=message)


class PinMismatch(GraphAPIError):
    """A registration gave another PIN than the number's two-step verification PIN (133005)."""

    codes = (133005,)


class NotRegistered(GraphAPIError):
    """The number is not registered with the Cloud API, so it can't send (133010)."""

    codes = (133010,)


class PolicyBlocked(GraphAPIError):
    """The account is temporarily blocked for policy violations (368)."""

    codes = (368,)


class RateLimited(GraphAPIError):
    """Root of the rate limits; Meta's advice is to back off and retry."""


class AppRateLimited(RateLimited):
    """The app made too many Graph API calls (4)."""

    codes = (4,)


class WabaRateLimited(RateLimited):
    """The business account reached its rate limit (80007)."""

    codes = (80007,)


class ThroughputLimited(RateLimited):
    """The phone number sent more messages per second than its throughput (130429)."""

    codes = (130429,)


class SpamRateLimited(RateLimited):
    """The number is restricted for sending messages users flagged (131048)."""

    codes = (131048,)


class PairRateLimited(RateLimited):
    """Too many messages to the same user in a short time (131056)."""

    codes = (131056,)


class GenericError(GraphAPIError):
    """Meta's catch-all "Something went wrong" (131000)."""

    codes = (131000,)


class ParameterMissing(GraphAPIError):
    """A required parameter is missing (131008)."""

    codes = (131008,)


class ParameterInvalid(GraphAPIError):
    """A parameter value is not valid, or a reaction targets an unusable message (131009)."""

    codes = (131009,)


class RecipientIsSender(GraphAPIError):
    """The business named its own number, to block it say (131021)."""

    codes = (131021,)


class ServiceUnavailable(GraphAPIError):
    """The Cloud API is temporarily unavailable (131016)."""

    codes = (131016,)


class Undeliverable(GraphAPIError):
    """The message could not reach the recipient (131026)."""

    codes = (131026,)


class ReEngagementRequired(GraphAPIError):
    """More than 24 hours since the user's last message: only templates may be sent (131047)."""

    codes = (131047,)


class EcosystemLimited(GraphAPIError):
    """Meta chose not to deliver the message, e.g. a marketing cap (131049)."""

    codes = (131049,)


class UnsupportedMessageType(GraphAPIError):
    """A message type the API does not support, sent or received (131051)."""

    codes = (131051,)


class MediaDownloadError(GraphAPIError):
    """Media a user sent could not be downloaded (131052)."""

    codes = (131052,)


class MediaUploadError(GraphAPIError):
    """Media could not be uploaded (131053)."""

    codes = (131053,)


class AccountInMaintenance(GraphAPIError):
    """The number is in maintenance, for instance during a throughput upgrade (131057)."""

    codes = (131057,)


class MessageUnavailable(GraphAPIError):
    """An inbound message whose content is not available (131060)."""

    codes = (131060,)


class RecipientNotSupported(GraphAPIError):
    """This message can't be addressed to a business-scoped user ID (131062)."""

    codes = (131062,)


class TemplateParamMismatch(GraphAPIError):
    """The template got a different number of parameters than it expects (132000)."""

    codes = (132000,)


class TemplateNotFound(GraphAPIError):
    """No template of that name exists in that language (132001)."""

    codes = (132001,)


class TemplateParamFormat(GraphAPIError):
    """A parameter is not of the kind the template takes there (132012)."""

    codes = (132012,)


class TemplatePaused(GraphAPIError):
    """The template is paused for low quality (132015)."""

    codes = (132015,)


class TemplateDisabled(GraphAPIError):
    """The template is disabled for good (132016)."""

    codes = (132016,)


class BlockUsersFailed(GraphAPIError):
    """A block or unblock call failed for some of its users (139100).

    Its body carries the call's lists beside the error (``result``: what
    succeeded and what failed, each failure with its own errors), as Meta
    answers it.
    """

    codes = (139100,)

    def __init__(
        self, code: int | None = None, *, result: Mapping[str, Any] | None = None, **given: Any
    ) -> None:
        super().__init__(code, **given)
        self.result = dict(result or {})

    def to_envelope(self) -> dict[str, Any]:
        """The call's lists, then the Graph API error body."""
        return {**self.result, **super().to_envelope()}


class BlocklistFull(GraphAPIError):
    """The business has blocked as many users as it may (139101)."""

    codes = (139101,)


class BlocklistError(GraphAPIError):
    """The blocklist could not be changed: Meta's internal error (139103)."""

    codes = (139103,)
