"""Bots and services of every shape, written as third parties write them, for the harness's tests.

The bots import nothing from this project: only the standard library, httpx,
starlette and uvicorn, and Meta's documented wire format. Each module offers
``create_app(settings, *, client=None)`` (a Starlette app serving ``/webhook``)
and runs on its own with ``python -m tests.bots.<name> --port N``, configured
from ``WHATSAPP_APP_SECRET``, ``WHATSAPP_VERIFY_TOKEN``,
``WHATSAPP_ACCESS_TOKEN``, ``WHATSAPP_PHONE_NUMBER_ID``, ``WHATSAPP_GRAPH_URL``
(for instance ``http://127.0.0.1:8000``) and ``WHATSAPP_API_VERSION`` (default
``v25.0``):

- ``inline``: replies ("You said: ...") inside the webhook handler, then answers
  200 (to ``BOT_REPLY_TO``, if set, whoever wrote). ``python -m tests.bots.inline
  --port 8001``
- ``background``: answers 200 at once and replies from a Starlette background
  task (``BOT_BACKGROUND=asyncio``: from ``asyncio.create_task``), after
  ``BOT_REPLY_DELAY_SECONDS`` (default 0). ``python -m tests.bots.background
  --port 8002``
- ``debounce``: one reply quoting every fragment once the user has been quiet
  for ``BOT_DEBOUNCE_SECONDS`` (default 0.5). ``python -m tests.bots.debounce
  --port 8003``
- ``per_fragment``: answers every text message on its own, at once (fails a
  "one reply per burst" check). ``python -m tests.bots.per_fragment --port 8004``
- ``greeter``: greets a number it has never heard from ("Nice to meet you!"),
  every later text "Welcome back!"; dedupes by wamid. ``python -m
  tests.bots.greeter --port 8006``
- ``pizza``: size, then confirm/cancel reply buttons; orders only on
  ``confirm``, at ``GET /orders`` and ``app.state.orders``; marks messages read;
  dedupes by wamid unless ``PIZZA_NO_DEDUPE=1``. ``python -m tests.bots.pizza
  --port 8005``

The services an agent waits on:

- ``fake_anthropic``: an Anthropic Messages API answering from a script, after a
  real delay, streaming or not, with scripted 429s, 500s and hangs.
  ``python -m tests.bots.fake_anthropic --port 8010 --delay 0.3 --script s.json``
  or ``serve_fake_anthropic(...)`` in-process.
- ``slow_service``: a CRM (``GET /customers/{id}``, ``POST /bookings``) that
  answers after a real delay. ``python -m tests.bots.slow_service --port 8020
  --delay 0.3`` or ``serve_slow_service(...)`` in-process.

Both record what they receive (``GET /_fake/requests``). ``loopback`` serves
them over real HTTP; ``meta`` builds signed webhooks and a recording Graph API
for the tests. This package re-exports nothing, so that starting one bot
imports no other.
"""
