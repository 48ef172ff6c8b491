"""The simulator's control API under ``/_harness/``, and the models of what it takes.

``harness serve`` mounts it beside the fake Graph API
(:mod:`~channels.whatsapp.control.routes`); each request body is a model in
:mod:`~channels.whatsapp.control.bodies` that checks the body and describes it
in ``/openapi.json``."""

from __future__ import annotations

from channels.whatsapp.control.bodies import (
    CONTROL_ENDPOINTS,
    CONTROL_OPENAPI_PATHS,
    CONTROL_OPENAPI_SCHEMAS,
    WA_ID_PATTERN,
    Advance,
    Clear,
    ControlBody,
    ControlEndpoint,
    ControlErrorBody,
    ControlErrorMessage,
    EventsPage,
    Inbound,
    Kept,
    NewUser,
    Now,
    Outbox,
    Played,
    Redeliver,
    RegisteredUser,
    Tap,
    UploadedMedia,
    Wamid,
    config_error,
    is_wa_id,
)
from channels.whatsapp.control.routes import (
    control_app,
    control_routes,
)

__all__ = [
    "CONTROL_ENDPOINTS",
    "CONTROL_OPENAPI_PATHS",
    "CONTROL_OPENAPI_SCHEMAS",
    "WA_ID_PATTERN",
    "Advance",
    "Clear",
    "ControlBody",
    "ControlEndpoint",
    "ControlErrorBody",
    "ControlErrorMessage",
    "EventsPage",
    "Inbound",
    "Kept",
    "NewUser",
    "Now",
    "Outbox",
    "Played",
    "Redeliver",
    "RegisteredUser",
    "Tap",
    "UploadedMedia",
    "Wamid",
    "config_error",
    "control_app",
    "control_routes",
    "is_wa_id",
]
