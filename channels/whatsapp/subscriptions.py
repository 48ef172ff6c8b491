"""Where webhooks go, as a bot tells Meta at start: its callback URL and verify token.

A bot (pywa with ``callback_url``, a setup script) registers its webhook in
one of three ways, each served here as Meta serves it:

- for the app: ``GET /oauth/access_token`` (``client_id``, ``client_secret``
  = the app secret, ``grant_type=client_credentials``) answers the app's
  token, ``{app_id}|{app_secret}``; with it, ``POST /{app_id}/subscriptions``
  (``object=whatsapp_business_account``, ``callback_url``, ``verify_token``,
  ``fields``);
- for the account: ``POST /{waba_id}/subscribed_apps`` with
  ``override_callback_uri`` and ``verify_token`` (without them, it subscribes
  the app to the account and changes nothing else);
- for the number: ``POST /{phone_number_id}`` with ``webhook_configuration``
  (``override_callback_uri``, ``verify_token``), alone or with the number's
  other settings (:mod:`~channels.whatsapp._number_settings`).

Meta checks the URL before it answers: a GET with ``hub.mode=subscribe``,
the verify token and a challenge, which the bot must echo. A URL that fails
answers 2200 and changes nothing. What happens after a registration passes is
the simulator's to say (:data:`CallbackHook`): on ``harness serve`` webhooks
go to the URL registered last, a number's own URL before the account's,
and the account's before the app's; in a run, where the harness already
delivers to the agent, a registration is checked and answered but does not
move the webhooks. Parameters are read from the query string, a form or a
JSON body, as Graph reads them.

``GET /{waba_id}/subscribed_apps`` lists the app (its id, name and link) once
it subscribed, and also, as on Meta, while webhooks go to a URL (``harness
serve --webhook-url``, a run against a URL): an app that receives the
account's webhooks is subscribed to it. A ``DELETE`` takes it off the list
until it subscribes again; the webhooks still go where they went.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from channels.whatsapp._graph_app import ANY_METHOD
from channels.whatsapp._number_settings import NUMBER_OBJECTS, NumberSettingsAPI, number_update
from channels.whatsapp._registration import RegistrationAPI
from channels.whatsapp._request_body import graph_parameters
from channels.whatsapp.account import AccountAPI, BusinessAccount, unknown_object
from channels.whatsapp.blocking import Blocklist, BlockUsersAPI
from channels.whatsapp.delivery import handshake
from channels.whatsapp.errors import AuthError, GraphAPIError
from channels.whatsapp.sends.problems import request_error
from channels.whatsapp.url_target import PostResult, UrlTarget
from harness.exceptions import HandshakeError

if TYPE_CHECKING:
    from channels.whatsapp.config import SimulatorConfig
    from channels.whatsapp.delivery import Deliverer, WebhookTarget
    from channels.whatsapp.signing import SignedBody
    from harness.clock import Clock
    from harness.trace import Event

__all__ = [
    "CallbackHook",
    "CallbackRegistration",
    "Registrar",
    "Simulated",
    "SubscriptionsAPI",
    "SwitchTarget",
    "business_routes",
    "verification_failed",
]

Scope = Literal["app", "waba", "phone"]
_BODY_LIMIT: Final = 64 * 1024
#: The error Meta answers when the callback URL fails its verification.
_VERIFICATION_FAILED: Final = 2200


@dataclass(frozen=True)
class CallbackRegistration:
    """A callback URL a bot registered: for the app, the account or one number."""

    scope: Scope
    url: str
    verify_token: str


#: Checks a registration's URL (the verification GET) and puts it to use, or raises what Meta
#: answers (:func:`verification_failed`). ``None`` on a graph API without a simulator behind.
CallbackHook = Callable[[CallbackRegistration], Awaitable[None]]


def verification_failed(problem: str) -> GraphAPIError:
    """Meta's answer for a callback URL that failed the verification GET (2200)."""
    details = f"Callback verification failed with the following errors: {problem}"
    return GraphAPIError(
        _VERIFICATION_FAILED,
        title="Callback verification failed",
        message=f"(#{_VERIFICATION_FAILED}) {details}",
        details=details,
    )


class SwitchTarget:
    """The webhook URL a bot registered last: a target whose URL a registration can change.

    Deliveries already scheduled go to the URL current when they go out, as
    Meta's retries go to the URL registered by then. The verification GET
    carries the verify token registered with the URL, as Meta's does.
    """

    remote = True

    def __init__(self, target: UrlTarget, verify_token: str | None = None) -> None:
        self._held = [target]
        self._token = verify_token
        #: The current URL.
        self.description = target.description

    def switch(self, target: UrlTarget, verify_token: str) -> None:
        """Deliver to ``target`` from now on, verified with ``verify_token``."""
        self._held.append(target)
        self._token = verify_token
        self.description = target.description

    async def post(self, body: SignedBody) -> PostResult:
        """POST to the current URL."""
        return await self._held[-1].post(body)

    async def get(self, params: dict[str, str]) -> tuple[int, str]:
        """The verification GET to the current URL, with the verify token registered for it."""
        if self._token is not None:
            params = {**params, "hub.verify_token": self._token}
        return await self._held[-1].get(params)

    async def aclose(self) -> None:
        """Close every URL's connections."""
        for target in self._held:
            await target.aclose()


class Simulated(Protocol):
    """What a :class:`Registrar` needs of the simulator it serves."""

    @property
    def config(self) -> SimulatorConfig:
        """Its settings (the webhook timeout)."""
        ...

    @property
    def clock(self) -> Clock:
        """Its clock, for the trace."""
        ...

    @property
    def paced(self) -> bool:
        """Whether its time follows real time (``harness serve``)."""
        ...

    @property
    def shared(self) -> object | None:
        """The state it shares with other processes, if any."""
        ...

    @property
    def deliverer(self) -> Deliverer | None:
        """What delivers webhooks now (``None``: nowhere yet)."""
        ...

    def record(self, event: Event) -> None:
        """Put ``event`` in the trace."""
        ...

    def connect(self, agent: WebhookTarget, *, verified: bool = False) -> None:
        """Deliver to ``agent`` from now on."""
        ...


class Registrar:
    """Puts the callback URLs bots register to use, on a simulator that follows real time.

    On ``harness serve`` a registration's URL is verified as Meta verifies it
    (the GET goes in the trace), then webhooks go to the number's own URL if
    one was registered, else the account's, else the app's. In a run, where
    the harness already delivers to the agent, nothing moves. A serve sharing
    its state with other processes refuses: each process has its own
    ``--webhook-url``.
    """

    def __init__(self, sim: Simulated) -> None:
        self.sim = sim
        self.registered: dict[Scope, CallbackRegistration] = {}

    async def __call__(self, registration: CallbackRegistration) -> None:
        """Verify ``registration``'s URL and deliver to it if it comes first; see the class."""
        sim = self.sim
        if not sim.paced:
            return
        if sim.shared is not None:
            raise request_error(
                "callback_url",
                "this harness serve shares its state with other processes, each delivering to"
                " its own --webhook-url; a callback URL can't be registered through one of them",
            )
        target = UrlTarget(registration.url, timeout=sim.config.webhook_timeout)
        try:
            await handshake(
                target,
                registration.verify_token,
                random.Random(),
                clock=sim.clock,
                record=sim.record,
            )
        except HandshakeError as exc:
            await target.aclose()
            raise verification_failed(str(exc)) from None
        self.registered[registration.scope] = registration
        first = next(self.registered[s] for s in ("phone", "waba", "app") if s in self.registered)
        if first is not registration:
            await target.aclose()  # a number's or the account's own URL still comes first
            return
        current = sim.deliverer.target if sim.deliverer is not None else None
        if isinstance(current, SwitchTarget):
            current.switch(target, registration.verify_token)
        else:
            current = SwitchTarget(target, registration.verify_token)
        sim.connect(current, verified=True)  # the same target again: what is scheduled stays

    def delivering(self) -> bool:
        """Whether the simulator delivers webhooks to a URL (so, on Meta, to a subscribed app)."""
        deliverer = self.sim.deliverer
        return deliverer is not None and isinstance(deliverer.target, SwitchTarget | UrlTarget)


class SubscriptionsAPI:
    """The registration endpoints (see the module).

    ``check`` refuses a bad version or access token (the business's tokens);
    the app's own token, ``{app_id}|{app_secret}``, is also taken where Meta
    takes it. ``on_callback`` is told of every registration that names a URL.
    """

    def __init__(
        self,
        account: BusinessAccount,
        app_secret: str,
        check: Callable[[Request], None],
        check_version: Callable[[Request], None],
        on_callback: CallbackHook | None = None,
    ) -> None:
        self.account = account
        self.app_secret = app_secret
        self._check = check
        self._check_version = check_version
        self.on_callback = on_callback
        #: The account's subscribed apps, as ``GET /{waba_id}/subscribed_apps`` lists them.
        self.subscribed: dict[str, dict[str, Any]] = {}
        #: Whether the app unsubscribed (``DELETE``) since it last subscribed.
        self.left = False

    async def app_token(self, request: Request) -> Response:
        """``GET /oauth/access_token``: the app's token, for its id and secret."""
        if "version" in request.path_params:
            self._check_version(request)
        query = request.query_params
        if query.get("grant_type") != "client_credentials":
            raise request_error("grant_type", 'must be "client_credentials" for an app token')
        app_id = query.get("client_id", "")
        if not app_id.isdigit():
            raise request_error("client_id", "the app's id is required (digits)")
        if query.get("client_secret") != self.app_secret:
            raise GraphAPIError(
                1,
                message="Error validating client secret.",
                details="client_secret is not the app's secret.",
            )
        return JSONResponse({"access_token": f"{app_id}|{self.app_secret}", "token_type": "bearer"})

    async def app_subscriptions(self, request: Request) -> Response:
        """``POST /{version}/{app_id}/subscriptions``: the app's webhook URL for an object."""
        self._check_version(request)
        app_id = request.path_params["app_id"]
        given = await graph_parameters(request, _BODY_LIMIT)
        self._app_token(request, given, app_id)
        if given.get("object") != "whatsapp_business_account":
            raise request_error(
                "object", 'must be "whatsapp_business_account" for WhatsApp webhooks'
            )
        url = _required(given, "callback_url")
        token = _required(given, "verify_token")
        await self._register(CallbackRegistration("app", url, token))
        return JSONResponse({"success": True})

    async def subscribed_apps(self, request: Request) -> Response:
        """``GET``, ``POST`` and ``DELETE /{version}/{waba_id}/subscribed_apps``."""
        self._check(request)
        waba_id = request.path_params["waba_id"]
        if waba_id != self.account.waba_id:
            raise unknown_object(request.method, waba_id)
        if request.method == "GET":
            listed = dict(self.subscribed)
            hook = self.on_callback
            if not listed and not self.left and isinstance(hook, Registrar) and hook.delivering():
                listed["app"] = self._app()  # it receives the account's webhooks
            return JSONResponse({"data": list(listed.values())})
        if request.method == "DELETE":
            self.subscribed.clear()
            self.left = True
            return JSONResponse({"success": True})
        given = await graph_parameters(request, _BODY_LIMIT)
        url = given.get("override_callback_uri")
        entry = self._app()
        if url is not None:
            token = _required(given, "verify_token")
            await self._register(
                CallbackRegistration("waba", _text(url, "override_callback_uri"), token)
            )
            entry["override_callback_uri"] = url
        self.subscribed["app"] = entry
        self.left = False
        return JSONResponse({"success": True})

    def _app(self) -> dict[str, Any]:
        """The app as the account lists it (Meta's example: its id, name and link)."""
        app_id = self.account.app_id
        link = f"https://www.facebook.com/games/?app_id={app_id}"
        return {"whatsapp_business_api_data": {"id": app_id, "name": "WhatsApp bot", "link": link}}

    async def phone_settings(self, request: Request, phone_number_id: str) -> Response:
        """``POST /{version}/{phone_number_id}``: the number's settings and its own webhook URL.

        Everything given is checked before anything changes (:func:`number_update`); a
        ``webhook_configuration`` is then verified and registered, and the rest kept.
        """
        given = await graph_parameters(request, _BODY_LIMIT, NUMBER_OBJECTS)
        shown = number_update(given)
        if "webhook_configuration" in given:
            configuration = given["webhook_configuration"]
            if not isinstance(configuration, Mapping):
                raise request_error(
                    "webhook_configuration",
                    "must be an object with override_callback_uri and verify_token",
                )
            url = _required(configuration, "override_callback_uri", "webhook_configuration.")
            token = _required(configuration, "verify_token", "webhook_configuration.")
            await self._register(CallbackRegistration("phone", url, token))
        self.account.number_settings.setdefault(phone_number_id, {}).update(shown)
        if "pin" in given:  # checked: six digits sets the PIN a registration must give, "" drops it
            if given["pin"]:
                self.account.pins[phone_number_id] = str(given["pin"])
            else:
                self.account.pins.pop(phone_number_id, None)
        return JSONResponse({"success": True})

    def _app_token(self, request: Request, given: Mapping[str, Any], app_id: str) -> None:
        """The app's own token, in the ``access_token`` parameter or the header.

        A client may carry the business's token in its header and give the app's as the
        parameter (pywa does); the call passes if either is the app's.
        """
        scheme, _, token = request.headers.get("authorization", "").strip().partition(" ")
        tokens = {given.get("access_token")}
        if scheme.lower() == "bearer":
            tokens.add(token.strip())
        if f"{app_id}|{self.app_secret}" not in tokens:
            raise AuthError(
                message="An app access token is required for this request.",
                details=f"POST /{app_id}/subscriptions takes the app's token, {app_id}|<secret>.",
            )

    async def _register(self, registration: CallbackRegistration) -> None:
        if not registration.url.startswith(("http://", "https://")):
            raise request_error("callback_url", "must be an http:// or https:// URL")
        if self.on_callback is not None:
            await self.on_callback(registration)


def _required(given: Mapping[str, Any], name: str, prefix: str = "") -> str:
    if name not in given:
        raise request_error(prefix + name, "required")
    return _text(given[name], prefix + name)


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise request_error(name, "must be a non-empty string")
    return value


Endpoint = Callable[[Request], Awaitable[Response]]


def business_routes(
    guard: Callable[[Endpoint], Endpoint],
    account: AccountAPI,
    subscriptions: SubscriptionsAPI | None,
    not_allowed: Callable[[Request, str], Response | None],
    blocklist: Blocklist | None = None,
) -> Sequence[Route]:
    """The routes of the account's endpoints and, given ``subscriptions``, the registrations.

    ``guard`` wraps each endpoint so that its errors answer Meta's envelope;
    ``not_allowed`` answers a method a path does not take (405), for the
    token's path, which would otherwise be read as ``/{version}/{id}``.
    ``blocklist`` keeps the users the number blocks (:mod:`~channels.whatsapp.blocking`; by
    default a list of its own, where no user is known to have written).
    """
    settings = NumberSettingsAPI(account)
    registration = RegistrationAPI(account)
    numbers = account.account.phone_numbers
    blocklist = blocklist or Blocklist(numbers={*numbers, *numbers.values()})
    routes = [
        Route(
            "/{version}/{phone_number_id}/block_users",
            guard(BlockUsersAPI(account, blocklist)),
            methods=["GET", "POST", "DELETE"],
        ),
        Route(
            "/{version}/{phone_number_id}/whatsapp_business_profile",
            guard(account.profile),
            methods=["GET", "POST"],
        ),
        Route(
            "/{version}/{phone_number_id}/conversational_automation",
            guard(settings.automation),
            methods=["GET", "POST"],
        ),
        Route(
            "/{version}/{phone_number_id}/whatsapp_commerce_settings",
            guard(settings.commerce),
            methods=["GET", "POST"],
        ),
        *(
            Route(f"/{{version}}/{{phone_number_id}}/{name}", guard(endpoint), methods=["POST"])
            for name, endpoint in (
                ("register", registration.register),
                ("deregister", registration.deregister),
                ("request_code", registration.request_code),
                ("verify_code", registration.verify_code),
            )
        ),
        Route("/{version}/{waba_id}/phone_numbers", guard(account.numbers)),
        Route(
            "/{version}/{waba_id}/message_templates",
            guard(account.templates),
            methods=["GET", "POST", "DELETE"],
        ),
    ]
    if subscriptions is not None:
        app_token = subscriptions.app_token

        async def token(request: Request) -> Response:
            return not_allowed(request, "GET, HEAD") or await app_token(request)

        routes += [
            Route("/oauth/access_token", guard(token), methods=ANY_METHOD),
            Route("/{version}/oauth/access_token", guard(token), methods=ANY_METHOD),
            Route(
                "/{version}/{app_id}/subscriptions",
                guard(subscriptions.app_subscriptions),
                methods=["POST"],
            ),
            Route(
                "/{version}/{waba_id}/subscribed_apps",
                guard(subscriptions.subscribed_apps),
                methods=["GET", "POST", "DELETE"],
            ),
        ]
    return routes
