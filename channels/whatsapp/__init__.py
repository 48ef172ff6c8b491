"""The WhatsApp Cloud API simulator: signed webhooks in, a faithful fake Graph API out.

Every public name of the simulator is importable from here; the modules hold
one concept each (payloads, signing, the Graph API, delivery, faults ...).
The send-body models are a package of their own, :mod:`channels.whatsapp.sends`:
the request models are re-exported here, their parts and building blocks are
imported from there.

Names load on first use (see :mod:`harness.lazy`): importing one module of the
simulator (the channel's plugin, when ``harness --help`` lists its commands)
does not import all the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

if TYPE_CHECKING:
    from channels.whatsapp.account import *
    from channels.whatsapp.activity import *
    from channels.whatsapp.asgi_target import *
    from channels.whatsapp.attribution import *
    from channels.whatsapp.blocking import *
    from channels.whatsapp.channel import *
    from channels.whatsapp.cli import serve_command as serve_command
    from channels.whatsapp.cli import simulator_options as simulator_options
    from channels.whatsapp.composing import *
    from channels.whatsapp.config import *
    from channels.whatsapp.control import CONTROL_OPENAPI_PATHS as CONTROL_OPENAPI_PATHS
    from channels.whatsapp.control import CONTROL_OPENAPI_SCHEMAS as CONTROL_OPENAPI_SCHEMAS
    from channels.whatsapp.control import control_app as control_app
    from channels.whatsapp.control import control_routes as control_routes
    from channels.whatsapp.delivery import *
    from channels.whatsapp.envelope import *
    from channels.whatsapp.error_codes import *
    from channels.whatsapp.errors import *
    from channels.whatsapp.faults import *
    from channels.whatsapp.forwarding import *
    from channels.whatsapp.graph import *
    from channels.whatsapp.ids import *
    from channels.whatsapp.inprocess import *
    from channels.whatsapp.latency import *
    from channels.whatsapp.limits import *
    from channels.whatsapp.load_cli import *
    from channels.whatsapp.media import *
    from channels.whatsapp.messages import Audio as Audio
    from channels.whatsapp.messages import AudioMessage as AudioMessage
    from channels.whatsapp.messages import Button as Button
    from channels.whatsapp.messages import ButtonMessage as ButtonMessage
    from channels.whatsapp.messages import ButtonReply as ButtonReply
    from channels.whatsapp.messages import ButtonReplyInteractive as ButtonReplyInteractive
    from channels.whatsapp.messages import ContactAddress as ContactAddress
    from channels.whatsapp.messages import ContactCard as ContactCard
    from channels.whatsapp.messages import ContactEmail as ContactEmail
    from channels.whatsapp.messages import ContactName as ContactName
    from channels.whatsapp.messages import ContactOrg as ContactOrg
    from channels.whatsapp.messages import ContactPhone as ContactPhone
    from channels.whatsapp.messages import ContactsMessage as ContactsMessage
    from channels.whatsapp.messages import ContactUrl as ContactUrl
    from channels.whatsapp.messages import Context as Context
    from channels.whatsapp.messages import Document as Document
    from channels.whatsapp.messages import DocumentMessage as DocumentMessage
    from channels.whatsapp.messages import Image as Image
    from channels.whatsapp.messages import ImageMessage as ImageMessage
    from channels.whatsapp.messages import InboundMessage as InboundMessage
    from channels.whatsapp.messages import Interactive as Interactive
    from channels.whatsapp.messages import InteractiveMessage as InteractiveMessage
    from channels.whatsapp.messages import ListReply as ListReply
    from channels.whatsapp.messages import ListReplyInteractive as ListReplyInteractive
    from channels.whatsapp.messages import Location as Location
    from channels.whatsapp.messages import LocationMessage as LocationMessage
    from channels.whatsapp.messages import MessageBase as MessageBase
    from channels.whatsapp.messages import Reaction as Reaction
    from channels.whatsapp.messages import ReactionMessage as ReactionMessage
    from channels.whatsapp.messages import Sticker as Sticker
    from channels.whatsapp.messages import StickerMessage as StickerMessage
    from channels.whatsapp.messages import Text as Text
    from channels.whatsapp.messages import TextMessage as TextMessage
    from channels.whatsapp.messages import UnknownInteractive as UnknownInteractive
    from channels.whatsapp.messages import UnknownMessage as UnknownMessage
    from channels.whatsapp.messages import Unsupported as Unsupported
    from channels.whatsapp.messages import UnsupportedMessage as UnsupportedMessage
    from channels.whatsapp.messages import Video as Video
    from channels.whatsapp.messages import VideoMessage as VideoMessage
    from channels.whatsapp.messages import audio as audio
    from channels.whatsapp.messages import button_reply as button_reply
    from channels.whatsapp.messages import contact_card as contact_card
    from channels.whatsapp.messages import contacts_message as contacts_message
    from channels.whatsapp.messages import document as document
    from channels.whatsapp.messages import image as image
    from channels.whatsapp.messages import list_reply as list_reply
    from channels.whatsapp.messages import location as location
    from channels.whatsapp.messages import parse_message as parse_message
    from channels.whatsapp.messages import reaction as reaction
    from channels.whatsapp.messages import sticker as sticker
    from channels.whatsapp.messages import template_button as template_button
    from channels.whatsapp.messages import text_message as text_message
    from channels.whatsapp.messages import unsupported as unsupported
    from channels.whatsapp.messages import video as video
    from channels.whatsapp.model_options import *
    from channels.whatsapp.openapi import *
    from channels.whatsapp.outbound import *
    from channels.whatsapp.payloads import *
    from channels.whatsapp.plugin import *
    from channels.whatsapp.proxy import *
    from channels.whatsapp.proxy_cli import *
    from channels.whatsapp.proxy_collector import *
    from channels.whatsapp.proxy_exchange import *
    from channels.whatsapp.proxy_record import *
    from channels.whatsapp.proxy_settings import *
    from channels.whatsapp.pseudonyms import *
    from channels.whatsapp.remote import *
    from channels.whatsapp.retention import *
    from channels.whatsapp.retention_policy import *
    from channels.whatsapp.router import *
    from channels.whatsapp.run_context import *
    from channels.whatsapp.sends import MESSAGE_MODELS as MESSAGE_MODELS
    from channels.whatsapp.sends import SEND_REQUEST as SEND_REQUEST
    from channels.whatsapp.sends import AudioSend as AudioSend
    from channels.whatsapp.sends import ContactsSend as ContactsSend
    from channels.whatsapp.sends import DocumentSend as DocumentSend
    from channels.whatsapp.sends import ImageSend as ImageSend
    from channels.whatsapp.sends import InteractiveSend as InteractiveSend
    from channels.whatsapp.sends import LocationSend as LocationSend
    from channels.whatsapp.sends import MessageSend as MessageSend
    from channels.whatsapp.sends import ReactionSend as ReactionSend
    from channels.whatsapp.sends import ReadReceipt as ReadReceipt
    from channels.whatsapp.sends import SendBody as SendBody
    from channels.whatsapp.sends import SendContext as SendContext
    from channels.whatsapp.sends import SendSummary as SendSummary
    from channels.whatsapp.sends import StickerSend as StickerSend
    from channels.whatsapp.sends import TemplateSend as TemplateSend
    from channels.whatsapp.sends import TextSend as TextSend
    from channels.whatsapp.sends import VideoSend as VideoSend
    from channels.whatsapp.sends import graph_error_for as graph_error_for
    from channels.whatsapp.sends import send_schemas as send_schemas
    from channels.whatsapp.server import *
    from channels.whatsapp.shared import *
    from channels.whatsapp.shared_delivery import *
    from channels.whatsapp.shared_media import *
    from channels.whatsapp.sharing import *
    from channels.whatsapp.signing import *
    from channels.whatsapp.simulator import *
    from channels.whatsapp.simuser import *
    from channels.whatsapp.statuses import *
    from channels.whatsapp.strays import *
    from channels.whatsapp.subscriptions import *
    from channels.whatsapp.summary import *
    from channels.whatsapp.templates import *
    from channels.whatsapp.timekeeping import *
    from channels.whatsapp.transport import *
    from channels.whatsapp.url_target import *
    from channels.whatsapp.validation import *
    from channels.whatsapp.window import *

#: The module that owns each public name.
_OWNERS: dict[str, str] = {
    "ANSWERED_QUIET": "channels.whatsapp.timekeeping",
    "AcceptAll": "channels.whatsapp.graph",
    "AccountAPI": "channels.whatsapp.account",
    "routed_call": "channels.whatsapp.forwarding",
    "BLOCKLIST_LIMIT": "channels.whatsapp.blocking",
    "MOST_PER_REQUEST": "channels.whatsapp.blocking",
    "BlockOutcome": "channels.whatsapp.blocking",
    "BlockUsersAPI": "channels.whatsapp.blocking",
    "Blocklist": "channels.whatsapp.blocking",
    "BlockTarget": "channels.whatsapp.blocking",
    "block_paths": "channels.whatsapp.blocking",
    "block_schemas": "channels.whatsapp.blocking",
    "block_targets": "channels.whatsapp.blocking",
    "user_blocked": "channels.whatsapp.blocking",
    "BlockUsersFailed": "channels.whatsapp.errors",
    "BlocklistError": "channels.whatsapp.errors",
    "BlocklistFull": "channels.whatsapp.errors",
    "RecipientIsSender": "channels.whatsapp.errors",
    "GRAPH_DOCS_URL": "channels.whatsapp.errors",
    "NO_SUCH_OBJECT_SUBCODE": "channels.whatsapp.errors",
    "NoSuchObject": "channels.whatsapp.errors",
    "NotRegistered": "channels.whatsapp.errors",
    "PinMismatch": "channels.whatsapp.errors",
    "UnknownPath": "channels.whatsapp.errors",
    "CallbackHook": "channels.whatsapp.subscriptions",
    "CallbackRegistration": "channels.whatsapp.subscriptions",
    "Registrar": "channels.whatsapp.subscriptions",
    "Simulated": "channels.whatsapp.subscriptions",
    "SubscriptionsAPI": "channels.whatsapp.subscriptions",
    "SwitchTarget": "channels.whatsapp.subscriptions",
    "business_routes": "channels.whatsapp.subscriptions",
    "verification_failed": "channels.whatsapp.subscriptions",
    "BusinessAccount": "channels.whatsapp.account",
    "business_account": "channels.whatsapp.account",
    "template_id": "channels.whatsapp.account",
    "template_object": "channels.whatsapp.account",
    "unknown_object": "channels.whatsapp.account",
    "display_number": "channels.whatsapp.account",
    "AccountInMaintenance": "channels.whatsapp.errors",
    "Activity": "channels.whatsapp.activity",
    "AppRateLimited": "channels.whatsapp.errors",
    "AsgiTarget": "channels.whatsapp.asgi_target",
    "Audio": "channels.whatsapp.messages",
    "AudioMessage": "channels.whatsapp.messages",
    "AudioSend": "channels.whatsapp.sends",
    "AuthError": "channels.whatsapp.errors",
    "BSUID_PATTERN": "channels.whatsapp.ids",
    "BackgroundServer": "channels.whatsapp.server",
    "Button": "channels.whatsapp.messages",
    "ButtonMessage": "channels.whatsapp.messages",
    "ButtonReply": "channels.whatsapp.messages",
    "ButtonReplyInteractive": "channels.whatsapp.messages",
    "CHANNEL_FIELDS": "channels.whatsapp.composing",
    "CONTROL_OPENAPI_PATHS": "channels.whatsapp.control",
    "CONTROL_OPENAPI_SCHEMAS": "channels.whatsapp.control",
    "Change": "channels.whatsapp.envelope",
    "Contact": "channels.whatsapp.envelope",
    "ContactAddress": "channels.whatsapp.messages",
    "ContactCard": "channels.whatsapp.messages",
    "ContactEmail": "channels.whatsapp.messages",
    "ContactName": "channels.whatsapp.messages",
    "ContactOrg": "channels.whatsapp.messages",
    "ContactPhone": "channels.whatsapp.messages",
    "ContactUrl": "channels.whatsapp.messages",
    "ContactsMessage": "channels.whatsapp.messages",
    "ContactsSend": "channels.whatsapp.sends",
    "Context": "channels.whatsapp.messages",
    "Conversation": "channels.whatsapp.statuses",
    "ConversationOrigin": "channels.whatsapp.statuses",
    "DEFAULT_LIMITS": "channels.whatsapp.validation",
    "DEFAULT_RETRY_SCHEDULE": "channels.whatsapp.config",
    "Deliverer": "channels.whatsapp.delivery",
    "Delivery": "channels.whatsapp.error_codes",
    "Document": "channels.whatsapp.messages",
    "DocumentMessage": "channels.whatsapp.messages",
    "DocumentSend": "channels.whatsapp.sends",
    "ERROR_CODES": "channels.whatsapp.error_codes",
    "ERROR_DOCS_URL": "channels.whatsapp.error_codes",
    "EcosystemLimited": "channels.whatsapp.errors",
    "Entry": "channels.whatsapp.envelope",
    "ErrorCode": "channels.whatsapp.error_codes",
    "ErrorData": "channels.whatsapp.errors",
    "ErrorObject": "channels.whatsapp.errors",
    "ErrorSpec": "channels.whatsapp.error_codes",
    "ErrorUpdate": "channels.whatsapp.envelope",
    "FaultDice": "channels.whatsapp.faults",
    "FaultProfile": "channels.whatsapp.faults",
    "GRAPH_API_VERSIONS": "channels.whatsapp.openapi",
    "GRAPH_HOSTS": "channels.whatsapp.transport",
    "GenericError": "channels.whatsapp.errors",
    "GraphAPIError": "channels.whatsapp.errors",
    "GraphError": "channels.whatsapp.errors",
    "GraphErrorEnvelope": "channels.whatsapp.errors",
    "GraphExchange": "channels.whatsapp.proxy_exchange",
    "GraphRedirect": "channels.whatsapp.transport",
    "GraphRedirectSync": "channels.whatsapp.transport",
    "GraphRouter": "channels.whatsapp.router",
    "INBOUND_MEDIA_LIFETIME": "channels.whatsapp.media",
    "Image": "channels.whatsapp.messages",
    "ImageMessage": "channels.whatsapp.messages",
    "ImageSend": "channels.whatsapp.sends",
    "InFlight": "channels.whatsapp.strays",
    "InProcessClient": "channels.whatsapp.inprocess",
    "InboundMessage": "channels.whatsapp.messages",
    "Interactive": "channels.whatsapp.messages",
    "InteractiveMessage": "channels.whatsapp.messages",
    "InteractiveSend": "channels.whatsapp.sends",
    "InvalidParameter": "channels.whatsapp.errors",
    "ListReply": "channels.whatsapp.messages",
    "ListReplyInteractive": "channels.whatsapp.messages",
    "Location": "channels.whatsapp.messages",
    "LocationMessage": "channels.whatsapp.messages",
    "LocationSend": "channels.whatsapp.sends",
    "MAX_UPDATES_PER_WEBHOOK": "channels.whatsapp.envelope",
    "MAX_WEBHOOK_BYTES": "channels.whatsapp.envelope",
    "MEDIA_KINDS": "channels.whatsapp.media",
    "MEDIA_SAMPLES": "channels.whatsapp.channel",
    "MESSAGE_MODELS": "channels.whatsapp.sends",
    "MESSAGE_TYPES": "channels.whatsapp.validation",
    "META_GRAPH_URL": "channels.whatsapp.proxy_settings",
    "META_USER_AGENT": "channels.whatsapp.url_target",
    "MediaDownloadError": "channels.whatsapp.errors",
    "MediaStore": "channels.whatsapp.media",
    "MediaUploadError": "channels.whatsapp.errors",
    "MessageBase": "channels.whatsapp.messages",
    "MessageSend": "channels.whatsapp.sends",
    "MessageUnavailable": "channels.whatsapp.errors",
    "MessageUpdate": "channels.whatsapp.envelope",
    "MetaModel": "channels.whatsapp.payloads",
    "Metadata": "channels.whatsapp.envelope",
    "OtherChange": "channels.whatsapp.envelope",
    "OutboundRules": "channels.whatsapp.outbound",
    "Owner": "channels.whatsapp.router",
    "PAYMENT_TYPES": "channels.whatsapp.validation",
    "PRESETS": "channels.whatsapp.faults",
    "PairRateLimited": "channels.whatsapp.errors",
    "PairRateLimiter": "channels.whatsapp.limits",
    "ParameterInvalid": "channels.whatsapp.errors",
    "ParameterMissing": "channels.whatsapp.errors",
    "PayloadError": "channels.whatsapp.payloads",
    "PendingUpdate": "channels.whatsapp.delivery",
    "PermissionDenied": "channels.whatsapp.errors",
    "PolicyBlocked": "channels.whatsapp.errors",
    "PostResult": "channels.whatsapp.url_target",
    "Pricing": "channels.whatsapp.statuses",
    "Profile": "channels.whatsapp.envelope",
    "ProxyRecorder": "channels.whatsapp.proxy_record",
    "ProxySettings": "channels.whatsapp.proxy_settings",
    "Pseudonymizer": "channels.whatsapp.pseudonyms",
    "QUIET": "channels.whatsapp.timekeeping",
    "RETRY_HORIZON": "channels.whatsapp.config",
    "RateLimited": "channels.whatsapp.errors",
    "ReEngagementRequired": "channels.whatsapp.errors",
    "Reaction": "channels.whatsapp.messages",
    "ReactionMessage": "channels.whatsapp.messages",
    "ReactionSend": "channels.whatsapp.sends",
    "ReadReceipt": "channels.whatsapp.sends",
    "RealTimeView": "channels.whatsapp.timekeeping",
    "ReceivedMessage": "channels.whatsapp.simuser",
    "RecipientNotSupported": "channels.whatsapp.errors",
    "RecordedLatency": "channels.whatsapp.latency",
    "RecordingCollector": "channels.whatsapp.proxy_collector",
    "RefusalHandler": "channels.whatsapp.graph",
    "RemoteSession": "channels.whatsapp.remote",
    "SEND_REQUEST": "channels.whatsapp.sends",
    "SIGNATURE_HEADER": "channels.whatsapp.signing",
    "SHARED_ANSWERED_QUIET": "channels.whatsapp.timekeeping",
    "SendAction": "channels.whatsapp.validation",
    "SendBody": "channels.whatsapp.sends",
    "SendContext": "channels.whatsapp.sends",
    "SendHandler": "channels.whatsapp.graph",
    "SendLimits": "channels.whatsapp.validation",
    "SendOutcome": "channels.whatsapp.graph",
    "SendSummary": "channels.whatsapp.sends",
    "SendValidator": "channels.whatsapp.validation",
    "SentMessage": "channels.whatsapp.simuser",
    "ServiceUnavailable": "channels.whatsapp.errors",
    "SessionWindows": "channels.whatsapp.window",
    "SignatureMalformed": "channels.whatsapp.signing",
    "SignatureMismatch": "channels.whatsapp.signing",
    "SignatureMissing": "channels.whatsapp.signing",
    "SignedBody": "channels.whatsapp.signing",
    "SimUser": "channels.whatsapp.simuser",
    "SimulatorConfig": "channels.whatsapp.config",
    "SpamRateLimited": "channels.whatsapp.errors",
    "Status": "channels.whatsapp.statuses",
    "StatusTiming": "channels.whatsapp.config",
    "StatusUpdate": "channels.whatsapp.envelope",
    "StatusValue": "channels.whatsapp.statuses",
    "Sticker": "channels.whatsapp.messages",
    "StickerMessage": "channels.whatsapp.messages",
    "StickerSend": "channels.whatsapp.sends",
    "StoredMedia": "channels.whatsapp.media",
    "StraySends": "channels.whatsapp.strays",
    "TYPING_SHOWN": "channels.whatsapp.activity",
    "TemplateButton": "channels.whatsapp.templates",
    "TemplateDisabled": "channels.whatsapp.errors",
    "TemplateNotFound": "channels.whatsapp.errors",
    "TemplateParamFormat": "channels.whatsapp.errors",
    "TemplateParamMismatch": "channels.whatsapp.errors",
    "TemplatePaused": "channels.whatsapp.errors",
    "TemplateRegistry": "channels.whatsapp.templates",
    "TemplateSend": "channels.whatsapp.sends",
    "TemplateSpec": "channels.whatsapp.templates",
    "Text": "channels.whatsapp.messages",
    "TextMessage": "channels.whatsapp.messages",
    "TextSend": "channels.whatsapp.sends",
    "ThroughputLimited": "channels.whatsapp.errors",
    "ThroughputLimiter": "channels.whatsapp.limits",
    "Timekeeping": "channels.whatsapp.timekeeping",
    "Timestamp": "channels.whatsapp.payloads",
    "TimestampLike": "channels.whatsapp.payloads",
    "TokenBucketLimiter": "channels.whatsapp.limits",
    "UPLOAD_LIFETIME": "channels.whatsapp.media",
    "UPSTREAM_OPTIONS": "channels.whatsapp.router",
    "ROUTE_OPTIONS": "channels.whatsapp.router",
    "FORWARDED_HEADER": "channels.whatsapp.forwarding",
    "ROUTE_TTL": "channels.whatsapp.forwarding",
    "Forwarder": "channels.whatsapp.forwarding",
    "RouteBook": "channels.whatsapp.forwarding",
    "read_body": "channels.whatsapp.forwarding",
    "read_templates": "channels.whatsapp.templates",
    "template_objects": "channels.whatsapp.templates",
    "recipients": "channels.whatsapp.forwarding",
    "replaying": "channels.whatsapp.forwarding",
    "route_key": "channels.whatsapp.forwarding",
    "URL_LIFETIME": "channels.whatsapp.media",
    "Undeliverable": "channels.whatsapp.errors",
    "UnknownInteractive": "channels.whatsapp.messages",
    "UnknownMessage": "channels.whatsapp.messages",
    "Unsupported": "channels.whatsapp.messages",
    "UnsupportedMessage": "channels.whatsapp.messages",
    "UnsupportedMessageType": "channels.whatsapp.errors",
    "Update": "channels.whatsapp.envelope",
    "UrlTarget": "channels.whatsapp.url_target",
    "UserMessages": "channels.whatsapp.composing",
    "VERSION_PATTERN": "channels.whatsapp.openapi",
    "ValidatedSend": "channels.whatsapp.validation",
    "Value": "channels.whatsapp.envelope",
    "Video": "channels.whatsapp.messages",
    "VideoMessage": "channels.whatsapp.messages",
    "VideoSend": "channels.whatsapp.sends",
    "WAMID_PATTERN": "channels.whatsapp.ids",
    "WEBHOOK_PATH": "channels.whatsapp.proxy",
    "WabaRateLimited": "channels.whatsapp.errors",
    "WebhookDelivery": "channels.whatsapp.proxy_exchange",
    "WebhookPayload": "channels.whatsapp.envelope",
    "WebhookTarget": "channels.whatsapp.delivery",
    "WhatsAppChannel": "channels.whatsapp.channel",
    "WhatsAppSimulator": "channels.whatsapp.simulator",
    "agent_settings": "channels.whatsapp.channel",
    "audio": "channels.whatsapp.messages",
    "batch_webhooks": "channels.whatsapp.envelope",
    "bsuid_for": "channels.whatsapp.ids",
    "bulk_wamid": "channels.whatsapp.ids",
    "build_openapi": "channels.whatsapp.openapi",
    "build_value": "channels.whatsapp.envelope",
    "build_webhook": "channels.whatsapp.envelope",
    "button_reply": "channels.whatsapp.messages",
    "call_asgi": "channels.whatsapp.inprocess",
    "call_shape": "channels.whatsapp.latency",
    "check_message_shape": "channels.whatsapp.composing",
    "check_scenario_faults": "channels.whatsapp.faults",
    "contact": "channels.whatsapp.envelope",
    "contact_item": "channels.whatsapp.envelope",
    "contact_card": "channels.whatsapp.messages",
    "contacts_message": "channels.whatsapp.messages",
    "control_app": "channels.whatsapp.control",
    "control_routes": "channels.whatsapp.control",
    "country_of": "channels.whatsapp.ids",
    "create_graph_app": "channels.whatsapp.graph",
    "create_proxy_app": "channels.whatsapp.proxy",
    "document": "channels.whatsapp.messages",
    "elapsed_ms": "channels.whatsapp.url_target",
    "error_envelope": "channels.whatsapp.errors",
    "error_object": "channels.whatsapp.errors",
    "error_response": "channels.whatsapp.openapi",
    "format_timestamp": "channels.whatsapp.payloads",
    "graph_error": "channels.whatsapp.errors",
    "graph_error_for": "channels.whatsapp.sends",
    "handshake": "channels.whatsapp.delivery",
    "id_source": "channels.whatsapp.ids",
    "image": "channels.whatsapp.messages",
    "interactive_options": "channels.whatsapp.summary",
    "is_animated_webp": "channels.whatsapp.media",
    "is_bsuid": "channels.whatsapp.ids",
    "is_message_send": "channels.whatsapp.strays",
    "is_valid": "channels.whatsapp.signing",
    "is_wamid": "channels.whatsapp.ids",
    "iter_updates": "channels.whatsapp.envelope",
    "json_body": "channels.whatsapp.openapi",
    "document_filename": "channels.whatsapp.media",
    "largest_size": "channels.whatsapp.media",
    "latest_quoted": "channels.whatsapp.attribution",
    "most_recently_quoted": "channels.whatsapp.attribution",
    "list_reply": "channels.whatsapp.messages",
    "load_json": "channels.whatsapp.payloads",
    "load_templates": "channels.whatsapp.templates",
    "load_command": "channels.whatsapp.load_cli",
    "location": "channels.whatsapp.messages",
    "media_kind": "channels.whatsapp.media",
    "message_item": "channels.whatsapp.envelope",
    "message_reply_id": "channels.whatsapp.summary",
    "message_text": "channels.whatsapp.summary",
    "model_endpoint_options": "channels.whatsapp.model_options",
    "model_records_path": "channels.whatsapp.model_options",
    "new_bsuid": "channels.whatsapp.ids",
    "new_conversation_id": "channels.whatsapp.ids",
    "new_fbtrace_id": "channels.whatsapp.ids",
    "new_media_id": "channels.whatsapp.ids",
    "new_pseudonym_key": "channels.whatsapp.pseudonyms",
    "new_wamid": "channels.whatsapp.ids",
    "normalize_wa_id": "channels.whatsapp.validation",
    "outbound_text": "channels.whatsapp.summary",
    "parse_json_body": "channels.whatsapp.validation",
    "parse_json_or_none": "channels.whatsapp.proxy_exchange",
    "parse_listen": "channels.whatsapp.proxy_cli",
    "parse_message": "channels.whatsapp.messages",
    "parse_status": "channels.whatsapp.statuses",
    "parse_webhook": "channels.whatsapp.envelope",
    "profile_contact_item": "channels.whatsapp.envelope",
    "pricing": "channels.whatsapp.statuses",
    "pricing_item": "channels.whatsapp.statuses",
    "proxy_command": "channels.whatsapp.proxy_cli",
    "proxy_main": "channels.whatsapp.proxy_cli",
    "reaction": "channels.whatsapp.messages",
    "request_text": "channels.whatsapp.attribution",
    "retry_delays": "channels.whatsapp.config",
    "send_schemas": "channels.whatsapp.sends",
    "serialize": "channels.whatsapp.signing",
    "serve_command": "channels.whatsapp.cli",
    "serve_proxy": "channels.whatsapp.proxy_cli",
    "serve_recording": "channels.whatsapp.model_options",
    "share_constants": "channels.whatsapp.envelope",
    "shared_graph": "channels.whatsapp.run_context",
    "sign": "channels.whatsapp.signing",
    "simulator_options": "channels.whatsapp.cli",
    "size_limit": "channels.whatsapp.media",
    "spec_for": "channels.whatsapp.error_codes",
    "split_fragments": "channels.whatsapp.faults",
    "status": "channels.whatsapp.statuses",
    "status_item": "channels.whatsapp.statuses",
    "sticker": "channels.whatsapp.messages",
    "success_body": "channels.whatsapp.graph",
    "template_button": "channels.whatsapp.messages",
    "text_message": "channels.whatsapp.messages",
    "unsupported": "channels.whatsapp.messages",
    "validate": "channels.whatsapp.payloads",
    "verify": "channels.whatsapp.signing",
    "video": "channels.whatsapp.messages",
    "webhook_body": "channels.whatsapp.envelope",
    "whatsapp_plugin": "channels.whatsapp.plugin",
    "Retention": "channels.whatsapp.retention",
    "RetentionPolicy": "channels.whatsapp.retention_policy",
    "SERVE_RETENTION": "channels.whatsapp.retention_policy",
    "LogWindow": "channels.whatsapp.shared",
    "SharedMeta": "channels.whatsapp.shared",
    "decode_events": "channels.whatsapp.shared",
    "decode_sends": "channels.whatsapp.shared",
    "open_shared": "channels.whatsapp.shared",
    "SharedMediaStore": "channels.whatsapp.shared_media",
    "media_record": "channels.whatsapp.shared_media",
    "SharedHooks": "channels.whatsapp.sharing",
    "SharedDeliverer": "channels.whatsapp.shared_delivery",
    "media_id_in": "channels.whatsapp.media",
    "Snapshot": "channels.whatsapp.retention",
    "Window": "channels.whatsapp.retention",
}

__all__ = sorted(_OWNERS)

_load, __dir__ = lazy_names(__name__, _OWNERS)

if not TYPE_CHECKING:
    # Hidden from type checkers: a visible module __getattr__ would make them
    # accept any name, typos included, as ``object``.
    __getattr__ = _load
