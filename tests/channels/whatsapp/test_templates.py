"""A business's own templates, as Meta lists them, and what a send must give each."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from channels.whatsapp.cli import serve_command
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.templates import (
    TemplateButton,
    TemplateRegistry,
    load_templates,
    read_templates,
    template_objects,
)
from channels.whatsapp.validation import SendValidator
from harness.exceptions import ConfigError

META = Path(__file__).parents[2] / "data" / "meta" / "meta-business-messaging-api_v23.0.yaml"
PHONE = "100200300400500"

ORDER_READY: dict[str, Any] = {
    "name": "order_ready",
    "language": "en_US",
    "status": "APPROVED",
    "category": "UTILITY",
    "id": "1192339204654487",
    "components": [
        {"type": "HEADER", "format": "IMAGE", "example": {"header_handle": ["4::aW1h"]}},
        {"type": "BODY", "text": "Hi {{1}}, order {{2}} is ready."},
        {"type": "FOOTER", "text": "Reply STOP to opt out"},
        {
            "type": "BUTTONS",
            "buttons": [
                {"type": "URL", "text": "Track", "url": "https://example.com/t/{{1}}"},
                {"type": "QUICK_REPLY", "text": "Stop"},
                {"type": "PHONE_NUMBER", "text": "Call", "phone_number": "15550001111"},
            ],
        },
    ],
}


def _meta() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(META.read_text(encoding="utf-8"))
    return document


def _listed() -> list[dict[str, Any]]:
    """Meta's example answer to GET /{WABA-ID}/message_templates."""
    get = _meta()["paths"]["/{Version}/{WABA-ID}/message_templates"]["get"]
    example = get["responses"]["200"]["content"]["application/json"]["examples"]
    data: list[dict[str, Any]] = example["Example response"]["value"]["data"]
    return data


def _created() -> dict[str, dict[str, Any]]:
    """Meta's example requests creating templates, by title."""
    post = _meta()["paths"]["/{Version}/{WABA-ID}/message_templates"]["post"]
    examples = post["requestBody"]["content"]["application/json"]["examples"]
    return {title: example["value"] for title, example in examples.items()}


def _send_examples() -> dict[str, dict[str, Any]]:
    """Meta's example template sends to the messages endpoint, by title."""
    post = _meta()["paths"]["/{Version}/{Phone-Number-ID}/messages"]["post"]
    examples = post["requestBody"]["content"]["application/json"]["examples"]
    return {
        title: example["value"]
        for title, example in examples.items()
        if example["value"].get("type") == "template"
    }


def _send(template: str, components: list[dict[str, Any]], language: str = "en_US") -> Any:
    return {
        "messaging_product": "whatsapp",
        "to": "5511987654321",
        "type": "template",
        "template": {"name": template, "language": {"code": language}, "components": components},
    }


def _refused(validator: SendValidator, body: Any, code: int) -> GraphAPIError:
    with pytest.raises(GraphAPIError) as info:
        validator.validate(PHONE, body)
    assert info.value.code == code, info.value.details
    return info.value


HEADER = {"type": "header", "parameters": [{"type": "image", "image": {"id": "123"}}]}
TWO = [{"type": "text", "text": "Ana"}, {"type": "text", "text": "#7"}]
BODY = {"type": "body", "parameters": TWO}
SEVEN = [{"type": "text", "text": "7"}]
URL = {"type": "button", "sub_type": "url", "index": "0", "parameters": SEVEN}


@pytest.fixture
def validator() -> SendValidator:
    return SendValidator(templates=TemplateRegistry.from_meta([ORDER_READY]))


def test_what_a_template_takes_is_read_from_its_components() -> None:
    (spec,) = read_templates({"data": [ORDER_READY], "paging": {"cursors": {}}})
    assert (spec.name, spec.language, spec.category, spec.status) == (
        "order_ready",
        "en_US",
        "utility",
        "APPROVED",
    )
    assert (spec.header_format, spec.header_params, spec.body_params) == ("image", 1, 2)
    assert spec.buttons == (
        TemplateButton("url", 1, 1),
        TemplateButton("quick_reply", 0, 1),
        TemplateButton("phone_number", 0, 0),
    )


def test_a_send_that_gives_what_the_template_takes_is_accepted(validator: SendValidator) -> None:
    validator.validate(PHONE, _send("order_ready", [HEADER, BODY, URL]))
    payload = {"type": "payload", "payload": "STOP"}
    quick = {"type": "button", "sub_type": "quick_reply", "index": 1, "parameters": [payload]}
    validator.validate(PHONE, _send("order_ready", [HEADER, BODY, URL, quick]))


def test_component_types_are_read_in_any_case(validator: SendValidator) -> None:
    # pywa writes "HEADER", "BODY" and "URL"; Meta's own examples write "CATALOG".
    shouting = [{**HEADER, "type": "HEADER"}, {**BODY, "type": "BODY"}, {**URL, "sub_type": "URL"}]
    sent = validator.validate(PHONE, _send("order_ready", shouting))
    assert sent.text is not None
    assert sent.text.startswith("Hi Ana, order #7")
    _refused(validator, _send("order_ready", shouting[1:]), 132000)


@pytest.mark.parametrize(
    ("components", "says"),
    [
        ([HEADER, BODY], "1 parameter(s) for button 0 (url), got 0"),
        ([BODY, URL], "expects 1 header parameter(s), got 0"),
        ([HEADER, {"type": "body", "parameters": BODY["parameters"][:1]}, URL], "body"),
        ([HEADER, BODY, {**URL, "parameters": SEVEN * 2}], "button 0 (url), got 2"),
        ([HEADER, BODY, URL, {**URL, "index": "2"}], "button 2 (phone_number), got 1"),
        ([HEADER, BODY, URL, {**URL, "index": 3}], "has 3 button(s)"),
        ([HEADER, BODY, {k: v for k, v in URL.items() if k != "index"}], "needs its index"),
    ],
)
def test_a_send_that_gives_other_parameters_answers_132000(
    validator: SendValidator, components: list[dict[str, Any]], says: str
) -> None:
    error = _refused(validator, _send("order_ready", components), 132000)
    assert says in error.details
    assert error.details.startswith("template.components")


def test_a_media_header_given_text_answers_132012(validator: SendValidator) -> None:
    text = {"type": "header", "parameters": [{"type": "text", "text": "Order 7"}]}
    error = _refused(validator, _send("order_ready", [text, BODY, URL]), 132012)
    assert "image header" in error.details
    assert "text parameter" in error.details


@pytest.mark.parametrize(
    ("status", "code"),
    [("PAUSED", 132015), ("DISABLED", 132016), ("PENDING", 132001), ("REJECTED", 132001)],
)
def test_only_an_approved_template_can_be_sent(status: str, code: int) -> None:
    registry = TemplateRegistry.from_meta([{**ORDER_READY, "status": status}])
    validator = SendValidator(templates=registry)
    error = _refused(validator, _send("order_ready", [HEADER, BODY, URL]), code)
    assert status in error.details.upper()


def test_named_parameters_are_given_by_name() -> None:
    named = {
        "name": "welcome",
        "language": "en_US",
        "parameter_format": "NAMED",
        "components": [{"type": "BODY", "text": "Hi {{first_name}}, {{code}}; {{first_name}}!"}],
    }
    validator = SendValidator(templates=TemplateRegistry.from_meta([named]))
    by_name = [
        {"type": "text", "parameter_name": "code", "text": "X1"},
        {"type": "text", "parameter_name": "first_name", "text": "Ana"},
    ]
    validator.validate(PHONE, _send("welcome", [{"type": "body", "parameters": by_name}]))
    unnamed = [{"type": "text", "text": "Ana"}, {"type": "text", "text": "X1"}]
    error = _refused(validator, _send("welcome", [{"type": "body", "parameters": unnamed}]), 132000)
    assert "names its body parameters first_name, code" in error.details
    wrong = [by_name[0], {**by_name[1], "parameter_name": "name"}]
    _refused(validator, _send("welcome", [{"type": "body", "parameters": wrong}]), 132000)


def test_meta_s_listed_templates_are_read_as_meta_lists_them() -> None:
    registry = TemplateRegistry.from_meta({"data": _listed()})
    hello = registry.get("hello_world", "en_US")
    promo = registry.get("2023_april_promo", "en_US")
    assert hello is not None
    assert promo is not None
    assert (hello.header_params, hello.body_params, hello.buttons) == (0, 0, ())
    assert (promo.body_params, promo.buttons) == (2, (TemplateButton("quick_reply", 0, 1),))
    assert hello.category == "marketing"


def test_every_template_meta_s_examples_create_is_read() -> None:
    created = _created()
    assert len(created) >= 10
    specs = {title: read_templates([body])[0] for title, body in created.items()}
    offer = specs[
        "Create template w/ image header, text body, text footer, and 2 call-to-action buttons"
    ]
    assert (offer.header_format, offer.body_params) == ("image", 3)
    assert offer.buttons == (TemplateButton("phone_number", 0, 0), TemplateButton("url", 1, 1))
    code = specs["Create authentication template w/ OTP copy code button"]
    assert (code.category, code.body_params, code.buttons) == (
        "authentication",
        1,
        (TemplateButton("otp", 1, 1),),
    )
    location = specs[
        "Create template w/ location header, text body, text footer, and a website buttons"
    ]
    assert (location.header_format, location.header_params) == ("location", 1)


def test_meta_s_flow_template_send_fits_meta_s_flow_template() -> None:
    created = _created()["Create Flow Template Message by Flow JSON"]
    validator = SendValidator(templates=TemplateRegistry.from_meta([created]))
    send = {**_send_examples()["Send Flow Template Message"], "to": "5511987654321"}
    validator.validate(PHONE, send)
    without = copy.deepcopy(send)
    without["template"]["components"][0]["parameters"] *= 2
    _refused(validator, without, 132000)


def test_an_authentication_code_goes_in_the_body_and_the_button() -> None:
    created = _created()["Create authentication template w/ OTP copy code button"]
    validator = SendValidator(templates=TemplateRegistry.from_meta([created]))
    code = [{"type": "text", "text": "123456"}]
    body = {"type": "body", "parameters": code}
    button = {"type": "button", "sub_type": "url", "index": "0", "parameters": code}
    name = created["name"]
    validator.validate(PHONE, _send(name, [body, button], created["language"]))
    error = _refused(validator, _send(name, [body], created["language"]), 132000)
    assert "button 0 (otp)" in error.details


def _body(text: str) -> list[dict[str, Any]]:
    return [{"name": "a", "language": "en", "components": [{"type": "BODY", "text": text}]}]


def test_a_send_reads_as_the_template_s_words_with_its_parameters_in(
    validator: SendValidator,
) -> None:
    sent = validator.validate(PHONE, _send("order_ready", [HEADER, BODY, URL]))
    assert sent.text == "Hi Ana, order #7 is ready.\nReply STOP to opt out"
    named = {
        "name": "paid",
        "language": "en",
        "components": [
            {"type": "HEADER", "format": "TEXT", "text": "Hello {{who}}"},
            {"type": "BODY", "text": "{{who}} paid {{amount}} on {{day}}."},
        ],
    }
    parameters = [
        {"type": "text", "parameter_name": "who", "text": "Ana"},
        {"type": "currency", "parameter_name": "amount",
         "currency": {"fallback_value": "$25.00", "code": "USD", "amount_1000": 25000}},
        {"type": "date_time", "parameter_name": "day", "date_time": {"fallback_value": "May 1"}},
    ]  # fmt: skip
    header = {"type": "header", "parameters": parameters[:1]}
    paid = SendValidator(templates=TemplateRegistry.from_meta([named]))
    body = _send("paid", [header, {"type": "body", "parameters": parameters}], "en")
    assert paid.validate(PHONE, body).text == "Hello Ana\nAna paid $25.00 on May 1."
    # a template known only by its counts has no words to show
    assert SendValidator().validate(PHONE, _send("hello_world", [])).text is None


def test_an_authentication_template_reads_as_meta_writes_it() -> None:
    created = _created()["Create authentication template w/ OTP copy code button"]
    validator = SendValidator(templates=TemplateRegistry.from_meta([created]))
    code = [{"type": "text", "text": "123456"}]
    button = {"type": "button", "sub_type": "url", "index": "0", "parameters": code}
    body = _send(created["name"], [{"type": "body", "parameters": code}, button])
    assert validator.validate(PHONE, body).text == (
        "123456 is your verification code. For your security, do not share this code.\n"
        "This code expires in 10 minutes."
    )


@pytest.mark.parametrize(
    ("objects", "says"),
    [
        ({"templates": []}, "(root): expected a list of templates"),
        ([{"language": "en_US"}], "[0].name: expected a non-empty string"),
        ([{"name": "a", "language": "en_US", "components": {}}], "[0].components: expected a list"),
        ([ORDER_READY, ORDER_READY], "[1].name: order_ready in en_US is listed twice"),
        (_body("{{1}} {{3}}"), "[0].components[0].text: placeholders must be numbered"),
        (_body("{{1}} {{x}}"), "all numbered ({{1}}) or all named"),
        (
            [{"name": "a", "language": "en", "components": [{"type": "BODY"}, {"type": "body"}]}],
            "[0].components[1].type: the template has a second BODY",
        ),
    ],
)  # fmt: skip
def test_bad_templates_are_one_line_naming_the_field(objects: object, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_templates(objects)
    assert says in str(info.value)
    assert "\n" not in str(info.value)


def test_a_file_of_templates_names_its_line(tmp_path: Path) -> None:
    good = tmp_path / "templates.json"
    good.write_text(yaml.safe_dump({"data": [ORDER_READY]}), encoding="utf-8")
    specs, objects = load_templates(good)
    assert [s.name for s in specs] == ["order_ready"]
    assert objects == (ORDER_READY,)
    assert load_templates(good)[1] is objects  # unchanged: not read again for each scenario
    good.write_text(yaml.safe_dump({"data": [ORDER_READY, {**ORDER_READY, "language": "en"}]}))
    assert [s.language for s in load_templates(good)[0]] == ["en_US", "en"]  # changed: read
    bad = tmp_path / "templates.yaml"
    bad.write_text(
        "data:\n  - name: a\n    language: en_US\n    components:\n      - type: HEADER\n"
        "        format: TEXT\n        text: 'Hi {{2}}'\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"templates\.yaml:7: data\[0\]\.components\[0\]\.text"):
        load_templates(bad)
    with pytest.raises(ConfigError, match=r"missing\.yaml"):
        template_objects(tmp_path / "missing.yaml")


async def test_a_simulator_sends_with_the_templates_in_its_config() -> None:
    config = SimulatorConfig(templates=(ORDER_READY,))
    sim = WhatsAppSimulator(config)
    client = sim.graph_client()
    try:
        sim.add_user("5511987654321")
        url = f"{config.public_url}/v25.0/{config.phone_number_id}/messages"
        headers = {"Authorization": f"Bearer {config.access_token}"}
        body = _send("order_ready", [HEADER, BODY, URL])
        sent = await client.post(url, json=body, headers=headers)
        assert sent.status_code == 200, sent.text
        missing = await client.post(url, json=_send("hello_world", []), headers=headers)
        assert missing.json()["error"]["code"] == 132001  # only the business's own templates
        short = await client.post(url, json=_send("order_ready", [HEADER, BODY]), headers=headers)
        assert short.json()["error"]["code"] == 132000
    finally:
        await client.aclose()
        await sim.aclose()
    assert WhatsAppSimulator(SimulatorConfig()).templates.get("hello_world", "en_US") is not None


def test_serve_refuses_a_bad_templates_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "templates.yaml"
    bad.write_text("- name: a\n  language: en_US\n  status: 7\n", encoding="utf-8")
    result = CliRunner().invoke(serve_command, ["--templates", str(bad), "--port", "1"])
    assert result.exit_code == 2
    assert "templates.yaml:3: [0].status: expected a non-empty string" in result.output
