"""Every known defect of Meta's OpenAPI description (v23.0), in one place.

Each entry says what the file gets wrong, what the simulator and these tests
follow instead (``whatsapp-cloud-api.md`` wins wherever it and the file
disagree), and how the tests correct the file: a list of :class:`Correction`
(a JSON pointer into Meta's file, what the file holds there, what the tests
put there). Examples of Meta's that the simulator does not take as written
are named in ``examples``; a request example the fake Graph API refuses says
with which code and at which path in ``refused_as``.

The tests apply these corrections and nothing else, and check that each one
still finds the defect it describes in the file and still matters (see
``test_defects``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ABSENT", "DEFECTS", "Correction", "SpecDefect", "defect"]


class _Absent:
    """Nothing at a pointer (a key the file lacks)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


@dataclass(frozen=True, slots=True)
class Correction:
    """At ``at`` (a JSON pointer) Meta's file holds ``spec``; the tests put ``ours`` there."""

    at: str
    spec: Any
    ours: Any


@dataclass(frozen=True, slots=True)
class SpecDefect:
    """One fault of Meta's file: what is wrong, what we follow, how the tests correct it."""

    key: str
    wrong: str
    follow: str
    corrections: tuple[Correction, ...] = ()
    examples: tuple[str, ...] = ()
    """Meta's examples (request or webhook, by name) this defect concerns."""
    refused_as: tuple[int, str] | None = None
    """For request examples the fake Graph API refuses: the code and the path it names."""
    tightens: bool = False
    """The correction makes the file stricter (it adds a check the file meant but lacks)."""


_SCHEMAS: Final = "/components/schemas/"


def _ref(name: str) -> str:
    return f"#{_SCHEMAS}{name}"


def _repoint(at: str, spec: str, ours: str) -> Correction:
    return Correction(f"{_SCHEMAS}{at}/$ref", _ref(spec), _ref(ours))


# The file holds two schemas for several message types: the send one under the
# plain name (TextMessage) and the webhook one under a suffixed name
# (TextMessage_2); the webhook's references name the plain, send, ones.
_INCOMING: Final = (
    ("TextMessage", "TextMessage_2"),
    ("ReactionMessage", "ReactionMessage_1"),
    ("AudioMessage", "AudioMessage_1"),
    ("DocumentMessage", "DocumentMessage_1"),
    ("ImageMessage", "ImageMessage_1"),
    ("StickerMessage", "StickerMessage_1"),
    ("VideoMessage", "VideoMessage_1"),
    ("LocationMessage", "LocationMessage_1"),
)
_WEBHOOK_MESSAGES: Final = (
    *(webhook for _, webhook in _INCOMING),
    "ContactSharingMessage",
    "UnsupportedMessage",
    "ButtonMessage",
    "InteractiveMessageReply",
    "OrderMessage",
    "SystemMessage",
)

DEFECTS: Final[tuple[SpecDefect, ...]] = (
    SpecDefect(
        key="incoming-messages-point-at-send-schemas",
        wrong=(
            "IncomingMessage, the union of the messages a webhook carries, refers to eight"
            " send schemas (TextMessage, AudioMessage ...: a body the bot POSTs, with `to` and"
            " `recipient_type` required) instead of the webhook's own, which the file keeps"
            " under the names TextMessage_2, AudioMessage_1 ... and never refers to."
        ),
        follow="The webhook schemas the file holds under the suffixed names.",
        corrections=tuple(
            _repoint(f"IncomingMessage/oneOf/{index}", send, webhook)
            for index, (send, webhook) in enumerate(_INCOMING)
        ),
    ),
    SpecDefect(
        key="webhook-messages-extend-the-send-base",
        wrong=(
            "Every webhook message schema extends BaseMessageProperties, the base of a send"
            " (messaging_product, recipient_type and to required; context.message_id), instead"
            " of BaseMessageProperties_1, the webhook's base (from, id, timestamp)."
        ),
        follow="BaseMessageProperties_1 as the base of every webhook message.",
        corrections=tuple(
            _repoint(f"{name}/allOf/0", "BaseMessageProperties", "BaseMessageProperties_1")
            for name in _WEBHOOK_MESSAGES
        ),
    ),
    SpecDefect(
        key="shared-contacts-use-the-send-contact",
        wrong=(
            "A contacts message's cards refer to ContactObject, the card a bot sends (no"
            " unknown keys; phone, email and address types HOME or WORK only), instead of"
            " ContactObject_1, the card a webhook carries (phone types such as CELL, MAIN)."
        ),
        follow="ContactObject_1 for the cards of an inbound contacts message.",
        corrections=(
            _repoint(
                "ContactSharingMessage/allOf/1/properties/contacts/items",
                "ContactObject",
                "ContactObject_1",
            ),
        ),
    ),
    SpecDefect(
        key="unsupported-errors-use-the-graph-error",
        wrong=(
            "An unsupported message's errors refer to ErrorObject, the Graph API error (type"
            " required, no title), instead of ErrorObject_2, the webhook error object (code,"
            " title, message, error_data.details) that Meta's own unsupported example has."
        ),
        follow="ErrorObject_2 for the errors inside an inbound message.",
        corrections=(
            _repoint(
                "UnsupportedMessage/allOf/1/properties/errors/items", "ErrorObject", "ErrorObject_2"
            ),
        ),
    ),
    SpecDefect(
        key="reply-shapes-only-in-a-discriminator",
        wrong=(
            "An interactive reply names its shapes (InteractiveButtonReplyContent,"
            " InteractiveListReplyContent) only in an OpenAPI discriminator mapping, which"
            " JSON Schema does not apply: as written, the reply's content is never checked."
        ),
        follow=(
            "The mapping as OpenAPI means it: a button_reply must fit"
            " InteractiveButtonReplyContent, a list_reply InteractiveListReplyContent."
        ),
        corrections=(
            Correction(
                f"{_SCHEMAS}InteractiveMessageReply/allOf/1/properties/interactive/allOf",
                ABSENT,
                [
                    {
                        "if": {"properties": {"type": {"const": kind}}, "required": ["type"]},
                        "then": {"$ref": _ref(shape)},
                    }
                    for kind, shape in (
                        ("button_reply", "InteractiveButtonReplyContent"),
                        ("list_reply", "InteractiveListReplyContent"),
                    )
                ],
            ),
        ),
        tightens=True,
    ),
    SpecDefect(
        key="reply-context-requires-a-product",
        wrong=(
            "A text message's context is ContextObject, which requires from, id and"
            " referred_product: it describes only a product inquiry, so a plain reply"
            " (context from and id) and a forwarded message (context forwarded or"
            " frequently_forwarded) fail it."
        ),
        follow=(
            "whatsapp-cloud-api.md section 2: a reply's context carries from and id, a"
            " forwarded message's carries forwarded or frequently_forwarded."
        ),
        corrections=(
            Correction(f"{_SCHEMAS}ContextObject/required", ["from", "id", "referred_product"], []),
        ),
    ),
    SpecDefect(
        key="sender-number-required-before-bsuids",
        wrong=(
            "The file predates business-scoped user ids: a webhook message must have"
            " `from`, the sender's phone number."
        ),
        follow=(
            "whatsapp-cloud-api.md section 2: `from` may be absent for a username-only"
            " user, who is known by `from_user_id` (and contacts[0].user_id) alone."
        ),
        corrections=(
            Correction(
                f"{_SCHEMAS}BaseMessageProperties_1/required",
                ["from", "id", "timestamp"],
                ["id", "timestamp"],
            ),
        ),
    ),
    SpecDefect(
        key="status-recipient-number-required-before-bsuids",
        wrong=(
            "The file predates business-scoped user ids: a status must have `recipient_id`,"
            " the user's phone number."
        ),
        follow=(
            "whatsapp-cloud-api.md sections 0 and 3: a status names the user by"
            " `recipient_user_id`; a username-only user has no phone number to name."
        ),
        corrections=(
            Correction(
                f"{_SCHEMAS}Statuses/required",
                ["id", "status", "timestamp", "recipient_id"],
                ["id", "status", "timestamp"],
            ),
        ),
    ),
    SpecDefect(
        key="no-played-status",
        wrong="A status is sent, delivered, read or failed; the file lacks `played`.",
        follow="whatsapp-cloud-api.md section 3: `played` (a voice message listened to).",
        corrections=(
            Correction(
                f"{_SCHEMAS}Statuses/properties/status/enum",
                ["sent", "delivered", "read", "failed"],
                ["sent", "delivered", "read", "failed", "played"],
            ),
        ),
    ),
    SpecDefect(
        key="reaction-removal-needs-an-emoji",
        wrong="A reaction must carry `emoji`, so a removed reaction without one fails.",
        follow=("whatsapp-cloud-api.md section 2: a removed reaction has an empty emoji or none."),
        corrections=(
            Correction(
                f"{_SCHEMAS}ReactionMessage_1/allOf/1/properties/reaction/required",
                ["message_id", "emoji"],
                ["message_id"],
            ),
        ),
    ),
    SpecDefect(
        key="no-request-welcome",
        wrong=(
            "An incoming message is one of the types the file lists; it lacks request_welcome,"
            " the message Meta sends when a user opens the chat for the first time."
        ),
        follow=(
            "Third-party evidence (pywa's message types name request_welcome): a message of"
            " type request_welcome, with the common fields and no object of its own."
        ),
        corrections=(
            Correction(
                f"{_SCHEMAS}RequestWelcomeMessage",
                ABSENT,
                {
                    "allOf": [
                        {"$ref": _ref("BaseMessageProperties_1")},  # the webhook's base
                        {
                            "type": "object",
                            "properties": {"type": {"const": "request_welcome"}},
                            "required": ["type"],
                        },
                    ]
                },
            ),
            Correction(
                f"{_SCHEMAS}IncomingMessageValueGeneral/properties/messages/items",
                {"$ref": _ref("IncomingMessage")},
                {
                    "oneOf": [
                        {"$ref": _ref("IncomingMessage")},
                        {"$ref": _ref("RequestWelcomeMessage")},
                    ]
                },
            ),
        ),
    ),
    SpecDefect(
        key="no-flow-replies",
        wrong=(
            "An interactive reply is a button_reply or a list_reply; the file lacks nfm_reply,"
            " the reply to a Flow."
        ),
        follow="whatsapp-cloud-api.md section 2, which names nfm_reply (Flows) as an inbound type.",
        corrections=(
            Correction(
                f"{_SCHEMAS}InteractiveMessageReply/allOf/1/properties/interactive/properties/type/enum",
                ["list_reply", "button_reply"],
                ["list_reply", "button_reply", "nfm_reply"],
            ),
        ),
    ),
    SpecDefect(
        key="unreadable-interactive-message",
        wrong=(
            "An interactive message must carry its context and its interactive object, so"
            " Meta's own observed sample fails: an interactive message without either, next"
            " to a value.errors entry (131000, Unsupported webhook payload)."
        ),
        follow="whatsapp-cloud-api.md section 2, Inbound errors (the observed sample).",
        corrections=(
            Correction(
                f"{_SCHEMAS}InteractiveMessageReply/allOf/1/required",
                ["type", "context", "interactive"],
                ["type"],
            ),
        ),
    ),
    SpecDefect(
        key="send-schemas-refuse-every-body",
        wrong=(
            "Each send schema (TextMessage, ImageMessage ... under Message) is an allOf of"
            " BaseMessageProperties and an object with additionalProperties false that lists"
            " only type and its content, so messaging_product, to and context count as unknown"
            " keys and no body passes: not one of Meta's 50 request examples does. Through"
            " BaseMessageProperties the file also offers `context` to reactions."
        ),
        follow=(
            "Meta's request examples as the statement of what Meta accepts, and"
            " whatsapp-cloud-api.md section 6 (a reaction can't quote a message: the fake"
            " Graph API refuses it with 131009); requests are not checked against Message."
        ),
    ),
    SpecDefect(
        key="reply-to-list-example-has-no-type",
        wrong=(
            "The request example 'Send Reply to List Message' has no type, which Meta's"
            " reference reads as a text message, and no text object."
        ),
        follow="The same list with its type, Meta's example 'Send List Message', which is taken.",
        examples=("Send Reply to List Message",),
        refused_as=(131008, "text"),
    ),
    SpecDefect(
        key="issue-resolution-example-has-boolean-text",
        wrong=(
            "The request example 'Send Sample Issue Resolution Template' gives its quick-reply"
            " parameters' text as booleans; the file's own TextParameter.text is a string."
        ),
        follow="TextParameter: a text parameter's text is a string.",
        examples=("Send Sample Issue Resolution Template",),
        refused_as=(131009, "template.components[1].parameters[0].text"),
    ),
    SpecDefect(
        key="upload-examples-are-curl-notation",
        wrong=(
            "The media upload's JSON request examples are curl's form notation"
            ' (`"file": "@/local/path/file.ogg;type=ogg"`), not a body anyone sends, and the'
            " multipart schema lacks the `type` field (the file's MIME type) uploads need."
        ),
        follow=(
            "The multipart form the examples stand for: the file as a file part and `type`"
            " its MIME type (audio/ogg, image/jpeg, image/webp)."
        ),
        examples=("Upload Audio", "Upload Image", "Upload Sticker"),
    ),
    SpecDefect(
        key="read-receipt-answer-not-referenced",
        wrong=(
            "The messages endpoint's 200 answer is MessageResponsePayload only; the answer to a"
            ' read receipt or typing indicator, `{"success": true}`, is described by'
            " MarkMessageResponsePayload, which no operation refers to."
        ),
        follow="MarkMessageResponsePayload for the answer to a read receipt or typing indicator.",
    ),
    SpecDefect(
        key="send-errors-not-described",
        wrong="The messages and media endpoints describe no error answers, only 200.",
        follow=(
            "whatsapp-cloud-api.md section 6 (the Graph error envelope), checked against the"
            " file's GraphAPIError, its 'Standard Graph API error response'."
        ),
    ),
    SpecDefect(
        key="group-examples-contradict-the-group-schema",
        wrong=(
            "The group webhook examples give `timestamp` as a string and participants' input"
            " and wa_id as numbers, where Groups says integer and strings; 'Group Remove"
            " Participants' has the field group_participants_update, which Change.field lacks."
        ),
        follow="Nothing yet: the simulator plays no groups, so these examples are not checked.",
        examples=("Group Create Message", "Group Settings Update", "Group Remove Participants"),
    ),
)


def defect(key: str) -> SpecDefect:
    """The listed defect ``key``."""
    for entry in DEFECTS:
        if entry.key == key:
            return entry
    raise KeyError(f"no such defect: {key}")
