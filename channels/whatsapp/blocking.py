"""Meta's Block Users API: the users a business blocked, and what blocking does to the chat.

- ``POST /{version}/{phone_number_id}/block_users`` with
  ``{"messaging_product": "whatsapp", "block_users": [{"user": "+16505551234"}]}``
  blocks each user (``user``: a phone number or wa_id; ``user_id``: a
  BSUID; given both, the phone number decides, as in a send); ``DELETE``
  with the same body unblocks; ``GET`` lists the blocked users, a page at a
  time (``limit``, ``after``, ``before``).
- Each user succeeds or fails on its own. All of them done: 200 with
  ``added_users`` (``removed_users`` for an unblock). Any failed: 400 with
  both lists, ``failed_users`` giving each failure's own errors (``code`` an
  integer), and the error 139100 beside them.
- Only a user who wrote in the last 24 hours may be blocked (the
  customer-service window, on the simulator's clock): anyone else fails
  with 131047, as does a number that is not a WhatsApp user (then without a
  ``wa_id``). The business's own number fails with 131021. The list holds
  :data:`BLOCKLIST_LIMIT` users (139101 past it); a call names at most
  :data:`MOST_PER_REQUEST` (130429 past it, and nothing changes).
  Unblocking knows no 24-hour rule.
- While blocked, a user's messages are dropped: the agent gets no webhook,
  the user's phone shows them sent, and the trace a ``dropped`` event. A send
  to the user, a read receipt or typing indicator for one of their messages,
  is refused with :func:`user_blocked` (131048, "User is blocked": Meta says
  only that it fails; the code is a third-party report's). Unblocking
  restores both.

Every change is in the trace as a ``block`` event, refused ones with their
error. The list is kept per simulator (per process under ``serve --redis``,
like the business profile).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import JSONResponse, Response

from channels.whatsapp._openapi_parts import VERSION, errors, json_body, obj, query, ref
from channels.whatsapp._paging import page
from channels.whatsapp._request_body import graph_parameters
from channels.whatsapp.errors import (
    BlockUsersFailed,
    GraphAPIError,
    ParameterInvalid,
    ParameterMissing,
    ReEngagementRequired,
    graph_error,
)
from channels.whatsapp.sends.common import normalize_wa_id
from channels.whatsapp.sends.problems import request_error
from channels.whatsapp.summary import message_text
from harness.trace import BlockChange, DroppedMessage, Event

if TYPE_CHECKING:
    from starlette.requests import Request

    from channels.whatsapp.account import AccountAPI
    from channels.whatsapp.simuser import SimUser
    from channels.whatsapp.window import SessionWindows
    from harness.clock import Clock

__all__ = [
    "BLOCKLIST_LIMIT",
    "MOST_PER_REQUEST",
    "BlockOutcome",
    "BlockTarget",
    "BlockUsersAPI",
    "Blocklist",
    "block_paths",
    "block_schemas",
    "block_targets",
    "user_blocked",
]

_log = logging.getLogger(__name__)

BLOCKLIST_LIMIT: Final = 64_000
"""How many users a business may have blocked at once (Meta's limit)."""
MOST_PER_REQUEST: Final = 1_000
"""How many users one call may block or unblock."""
_BODY_LIMIT: Final = 1024 * 1024
_SELF_BLOCK: Final = 131021
_LIST_FULL: Final = 139101
_INTERNAL: Final = 139103
_TOO_MANY: Final = 130429
_BLOCKED_CODE: Final = 131048
_NOT_RECENT: Final = "User has not messaged in the last 24 hours"
_NOT_A_USER: Final = "The number is not a WhatsApp user"


def user_blocked() -> GraphAPIError:
    """The refusal of a send (or a read receipt) to a user the business has blocked."""
    return graph_error(
        _BLOCKED_CODE,
        title="User is blocked",
        message=f"(#{_BLOCKED_CODE}) User is blocked",
        details="The business has blocked this user; unblock them to message them.",
    )


@dataclass(frozen=True, slots=True)
class BlockTarget:
    """One user a call names: by ``user`` (a phone number or wa_id) or ``user_id`` (BSUID)."""

    input: str
    by_bsuid: bool = False


@dataclass(frozen=True, slots=True)
class BlockOutcome:
    """What became of one user of a call: the ids it answers with, or its error."""

    input: str
    wa_id: str | None = None
    user_id: str | None = None
    error: GraphAPIError | None = None
    by_bsuid: bool = False

    def item(self) -> dict[str, Any]:
        """The user as the answer lists it: ``input``, then the id of the kind it was named by.

        A user named by phone number is answered with ``wa_id``, one named by
        BSUID with ``user_id``, as Meta's guide has it.
        """
        listed: dict[str, Any] = {"input": self.input}
        if self.by_bsuid and self.user_id is not None:
            listed["user_id"] = self.user_id
        elif self.wa_id is not None:
            listed["wa_id"] = self.wa_id
        elif self.user_id is not None:
            listed["user_id"] = self.user_id
        if self.error is not None:
            error = self.error
            details = {"details": error.details}
            listed["errors"] = [{"message": error.title, "code": error.code, "error_data": details}]
        return listed


def block_targets(given: Mapping[str, object]) -> list[BlockTarget]:
    """The users a block or unblock call names, once its parameters are checked.

    ``messaging_product`` missing or wrong answers 100 and ``block_users``
    missing 131008, as a send's would; a bad value 131009 naming it; more than
    :data:`MOST_PER_REQUEST` users 130429.
    """
    if given.get("messaging_product") != "whatsapp":
        raise request_error("messaging_product", 'required, and must be "whatsapp"')
    users = given.get("block_users")
    if users is None:
        raise ParameterMissing(details='block_users: required: a list of {"user": ...}')
    if not isinstance(users, list) or not users:
        raise ParameterInvalid(details="block_users: must be a non-empty list of users")
    if len(users) > MOST_PER_REQUEST:
        details = (
            f"block_users: {len(users)} users in one request; a request may name at most"
            f" {MOST_PER_REQUEST}"
        )
        raise graph_error(_TOO_MANY, message=f"(#{_TOO_MANY}) Too many users", details=details)
    targets = []
    for i, user in enumerate(users):
        at = f"block_users[{i}]"
        named = user.keys() & {"user", "user_id"} if isinstance(user, Mapping) else set()
        if not isinstance(user, Mapping) or not named or len(user) != len(named):
            raise ParameterInvalid(details=f'{at}: must be {{"user": ...}} or {{"user_id": ...}}')
        for key in sorted(named):
            value = user[key]
            if not isinstance(value, str) or not value.strip():
                details = f"{at}.{key}: must be a phone number, wa_id or BSUID"
                raise ParameterInvalid(details=details)
        # Named both ways (whatsapp-api-js sends both), the phone number decides, as in a send.
        by_bsuid = "user" not in named
        targets.append(BlockTarget(user["user_id" if by_bsuid else "user"], by_bsuid=by_bsuid))
    return targets


class Blocklist:
    """The users a business has blocked, in the order it blocked them, and Meta's rules.

    ``numbers`` are the business's own numbers (display numbers and ids).
    ``find`` names the simulated user a wa_id or BSUID belongs to, ``windows``
    says who wrote in the last 24 hours; without them (a Graph API with no
    simulator behind it) every user is one who never wrote. ``record`` hears
    of every change, refused ones too, and of every message dropped.
    """

    def __init__(
        self,
        *,
        numbers: Collection[str] = (),
        find: Callable[[str], SimUser | None] = lambda key: None,
        windows: SessionWindows | None = None,
        clock: Clock | None = None,
        record: Callable[[Event], None] | None = None,
    ) -> None:
        self.numbers = frozenset(numbers)
        self._find = find
        self._windows = windows
        self._clock = clock
        self._record = record
        #: Each blocked user's key (wa_id, else BSUID) and the user, in the order blocked.
        self._blocked: dict[str, tuple[str | None, str | None]] = {}

    def holds(self, key: str) -> bool:
        """Whether the user of this key (wa_id or BSUID) is blocked now."""
        return key in self._blocked

    def listed(self) -> list[dict[str, Any]]:
        """The blocked users as ``GET block_users`` lists them, the first blocked first."""
        return [_listed(wa_id, user_id) for wa_id, user_id in self._blocked.values()]

    async def change(self, targets: Sequence[BlockTarget], *, block: bool) -> list[BlockOutcome]:
        """Block (or unblock) each of ``targets``: one outcome each, in order."""
        outcomes = []
        for target in targets:
            outcome = await self._one(target, block=block)
            outcomes.append(outcome)
            if self._record is not None and self._clock is not None:
                self._record(
                    BlockChange(
                        at=self._clock.now(),
                        user=outcome.wa_id or outcome.user_id,
                        blocked=block,
                        input=target.input,
                        error=None if outcome.error is None else outcome.error.to_error_info(),
                    )
                )
        return outcomes

    async def _one(self, target: BlockTarget, *, block: bool) -> BlockOutcome:
        key = target.input.strip() if target.by_bsuid else normalize_wa_id(target.input)
        if key is None:  # not a phone number at all
            return BlockOutcome(target.input, error=_invalid(_NOT_A_USER))
        if not target.by_bsuid and key in self.numbers:
            error = graph_error(_SELF_BLOCK)
            return BlockOutcome(target.input, wa_id=key, error=error)
        user = self._find(key)
        if user is not None and not user.on_whatsapp:
            return BlockOutcome(target.input, error=_invalid(_NOT_A_USER))
        wa_id: str | None
        user_id: str | None
        if user is not None:
            wa_id, user_id = user.wa_id, user.user_id
        else:  # a user who never wrote: known by what the call gave
            wa_id, user_id = (None, key) if target.by_bsuid else (key, None)
        done = BlockOutcome(target.input, wa_id, user_id, by_bsuid=target.by_bsuid)
        held = user.key if user is not None else key
        if not block:
            self._blocked.pop(held, None)
            return done
        if held in self._blocked:
            return done
        if not await self._wrote_recently(held):
            return replace(done, error=_invalid(_NOT_RECENT))
        if len(self._blocked) >= BLOCKLIST_LIMIT:
            return replace(done, error=graph_error(_LIST_FULL))
        self._blocked[held] = (wa_id, user_id)
        return done

    async def _wrote_recently(self, key: str) -> bool:
        return self._windows is not None and await self._windows.is_open(key)

    def drops(self, user: SimUser, item: Mapping[str, Any], at: datetime) -> bool:
        """Whether a message ``user`` sends now is dropped (they are blocked); it is traced."""
        if user.key not in self._blocked:
            return False
        if self._record is not None:
            self._record(
                DroppedMessage(
                    at=at,
                    user=user.key,
                    wamid=str(item["id"]),
                    type=str(item.get("type", "")),
                    text=message_text(item),
                )
            )
        return True


def _invalid(details: str) -> GraphAPIError:
    """The per-user error for a user who can't be blocked now: 131047 and why."""
    return ReEngagementRequired(title="Re-engagement required", details=details)


def _listed(wa_id: str | None, user_id: str | None) -> dict[str, Any]:
    if wa_id is not None:
        return {"messaging_product": "whatsapp", "wa_id": wa_id}
    return {"messaging_product": "whatsapp", "user_id": user_id}


class BlockUsersAPI:
    """``GET``, ``POST`` and ``DELETE /{version}/{phone_number_id}/block_users`` (the module).

    ``account`` checks each call's version, token and number as every
    account endpoint does.
    """

    def __init__(self, account: AccountAPI, blocklist: Blocklist) -> None:
        self._number = account.known_number
        self.blocklist = blocklist

    async def __call__(self, request: Request) -> Response:
        """Answer one call, as Meta answers it."""
        self._number(request)
        if request.method == "GET":
            return JSONResponse(page(request, self.blocklist.listed()))
        block = request.method == "POST"
        targets = block_targets(await graph_parameters(request, _BODY_LIMIT, ("block_users",)))
        try:
            outcomes = await self.blocklist.change(targets, block=block)
        except Exception as exc:  # the list could not be changed: Meta's internal error
            _log.exception("the blocklist failed on %s %s", request.method, request.url)
            details = f"The blocklist could not be changed ({type(exc).__name__})."
            raise graph_error(_INTERNAL, details=details) from None
        return _answer(outcomes, block=block)


def _answer(outcomes: Iterable[BlockOutcome], *, block: bool) -> Response:
    done = "added_users" if block else "removed_users"
    result: dict[str, Any] = {done: [], "failed_users": []}
    for outcome in outcomes:
        result["failed_users" if outcome.error else done].append(outcome.item())
    if not result["failed_users"]:
        del result["failed_users"]
        return JSONResponse({"messaging_product": "whatsapp", "block_users": result})
    verb = "block" if block else "unblock"
    details = f"Failed to {verb} some users, see the block_users response list for details"
    answer = {"messaging_product": "whatsapp", "block_users": result}
    raise BlockUsersFailed(result=answer, details=details)


# -- the OpenAPI description -------------------------------------------------------------


def block_schemas() -> dict[str, Any]:
    """The component schemas of the block users endpoints, named as Meta names them."""
    string = {"type": "string", "minLength": 1}
    user = {
        "type": "object",
        "properties": {"user": string, "user_id": string},
        "minProperties": 1,
        "additionalProperties": False,
    }
    error = obj(
        ["message", "code"],
        message={"type": "string"},
        code={"type": "integer"},
        error_data=obj(["details"], details={"type": "string"}),
    )
    listed = {"type": "array", "items": ref("BlockedUserOperation")}
    product = {"const": "whatsapp"}
    return {
        "BlockUsersRequest": obj(
            ["messaging_product", "block_users"],
            messaging_product=product,
            block_users={
                "type": "array",
                "minItems": 1,
                "maxItems": MOST_PER_REQUEST,
                "items": user,
            },
        ),
        "BlockedUser": obj(
            ["messaging_product"], messaging_product=product, wa_id=string, user_id=string
        ),
        "GetBlockedUsersData": obj(
            ["data"], data={"type": "array", "items": ref("BlockedUser")}, paging={"type": "object"}
        ),
        "BlockedUserOperation": obj(
            ["input"], input={"type": "string"}, wa_id=string, user_id=string
        ),
        "BlockUserFailure": obj(
            ["input", "errors"],
            input={"type": "string"},
            wa_id=string,
            user_id=string,
            errors={"type": "array", "minItems": 1, "items": error},
        ),
        "BlockUsersData": obj(
            ["messaging_product", "block_users"],
            messaging_product=product,
            block_users=obj(["added_users"], added_users=listed),
        ),
        "UnblockUsersData": obj(
            ["messaging_product", "block_users"],
            messaging_product=product,
            block_users=obj(["removed_users"], removed_users=listed),
        ),
        "BlockUsersFailed": obj(
            ["messaging_product", "block_users", "error"],
            messaging_product=product,
            block_users=obj(
                ["failed_users"],
                added_users=listed,
                removed_users=listed,
                failed_users={"type": "array", "minItems": 1, "items": ref("BlockUserFailure")},
            ),
            error=ref("GraphError/properties/error"),
        ),
    }


def block_paths(phone: Mapping[str, Any]) -> dict[str, Any]:
    """The operations of ``/{version}/{phone_number_id}/block_users``, named as Meta names them."""
    paging = [
        query("limit", "At most this many on a page (25 by default)."),
        query("after", "The page after this cursor."),
        query("before", "The page before this cursor."),
    ]
    refused = {
        "400": json_body(
            {"anyOf": [ref("BlockUsersFailed"), ref("GraphError")]},
            "Some users failed (each with its errors, beside 139100), or a bad request.",
        ),
        **errors("401", "500"),
    }

    def change(operation_id: str, summary: str, answer: str, name: str) -> dict[str, Any]:
        done = "added_users" if answer == "BlockUsersData" else "removed_users"
        example = {"input": "+16505551234", "wa_id": "16505551234"}
        answered = {"block_users": {done: [example]}, "messaging_product": "whatsapp"}
        asked = {"block_users": [{"user": "+16505551234"}], "messaging_product": "whatsapp"}
        ok = json_body(ref(answer), "Every user done.")
        ok["content"]["application/json"]["examples"] = {name: {"value": answered}}
        return {
            "operationId": operation_id,
            "summary": summary,
            "parameters": [VERSION, phone],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": ref("BlockUsersRequest"),
                        "examples": {name: {"value": asked}},
                    }
                },
            },
            "responses": {"200": ok, **refused},
        }

    listing = json_body(ref("GetBlockedUsersData"), "A page of them.")
    listing["content"]["application/json"]["examples"] = {
        "Get blocked users": {
            "value": {
                "data": [{"messaging_product": "whatsapp", "wa_id": "16505551234"}],
                "paging": {"cursors": {"after": "MA", "before": "MA"}},
            }
        }
    }
    return {
        "/{version}/{phone_number_id}/block_users": {
            "get": {
                "operationId": "getBlockedUsers",
                "summary": "The users the number has blocked, the first blocked first.",
                "parameters": [VERSION, phone, *paging],
                "responses": {"200": listing, **errors("400", "401", "500")},
            },
            "post": change(
                "blockUserS",
                "Block users who wrote in the last 24 hours: their messages are dropped, and"
                " sends to them refused.",
                "BlockUsersData",
                "Block user(s)",
            ),
            "delete": change(
                "unblockUserS", "Unblock users.", "UnblockUsersData", "Unblock user(s)"
            ),
        }
    }
