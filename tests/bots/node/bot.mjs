// A WhatsApp bot written with whatsapp-api-js, as its README shows, on node:http.
// It imports nothing of the project; only its Graph API host comes from the
// environment (the library names https://graph.facebook.com; a fetch of the
// bot's own sends those calls to WHATSAPP_GRAPH_URL instead).
//
// For a text, it marks the message read with "typing...", then echoes it as a
// reply to it; "buttons" gets two reply buttons, and a tap is answered with its
// id; "card" gets a contact card; "offer" gets the template order_ready, with a
// header, a body (a name and an amount), a URL, a payload and a code to copy; "block me"
// blocks the user, through the Block Users API. For a photo it downloads the file, checks its sha256 against the
// webhook's and the media endpoint's, uploads it again and sends it back by the new id, then deletes it.
//
//   PORT=8004 WHATSAPP_GRAPH_URL=http://127.0.0.1:8000 WHATSAPP_...=... node bot.mjs

import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { WhatsAppAPI } from "whatsapp-api-js/middleware/node-http";
import { Node18 } from "whatsapp-api-js/setup/node";
import {
  ActionButtons,
  Body,
  BodyComponent,
  BodyParameter,
  Button,
  Contacts,
  CopyComponent,
  Currency,
  HeaderComponent,
  HeaderParameter,
  Image,
  Interactive,
  Language,
  Name,
  PayloadComponent,
  Phone,
  Template,
  Text,
  URLComponent,
} from "whatsapp-api-js/messages";

const env = process.env;
const graph = (env.WHATSAPP_GRAPH_URL ?? "https://graph.facebook.com").replace(/\/$/, "");
const phoneID = env.WHATSAPP_PHONE_NUMBER_ID;

// Node18 gives the library node:crypto's WebCrypto, for Node.js 18 and later.
const Whatsapp = new WhatsAppAPI(Node18({
  token: env.WHATSAPP_ACCESS_TOKEN,
  appSecret: env.WHATSAPP_APP_SECRET,
  webhookVerifyToken: env.WHATSAPP_VERIFY_TOKEN,
  v: env.WHATSAPP_API_VERSION ?? "v23.0",
  ponyfill: {
    fetch: (url, init) =>
      fetch(String(url).replace("https://graph.facebook.com", graph), init),
  },
}));

function failed(what, response) {
  if (response && "error" in response) {
    console.error(`${what} failed: ${JSON.stringify(response.error)}`);
    return true;
  }
  return false;
}

async function echoPhoto(image, reply) {
  const info = await Whatsapp.retrieveMedia(image.id, phoneID);
  if (failed("media lookup", info)) return;
  const download = await Whatsapp.fetchMedia(info.url);
  const bytes = Buffer.from(await download.arrayBuffer());
  // The webhook gives the file's sha256 in base64, the media endpoint in hex.
  const digest = createHash("sha256").update(bytes);
  const same = digest.copy().digest("base64") === image.sha256 && digest.digest("hex") === info.sha256;
  const form = new FormData();
  form.append("file", new Blob([bytes], { type: info.mime_type }), "photo");
  const uploaded = await Whatsapp.uploadMedia(phoneID, form);
  if (failed("upload", uploaded)) return;
  const caption = `${bytes.length} bytes, ${same ? "as sent" : "changed on the way"}`;
  if (failed("photo", await reply(new Image(uploaded.id, true, caption)))) return;
  failed("delete", await Whatsapp.deleteMedia(uploaded.id, phoneID));
}

Whatsapp.on.message = async ({ message, reply, received, block }) => {
  if (failed("read receipt", await received("text"))) return;
  if (message.type === "text" && message.text.body === "block me") {
    failed("block", await block());
  } else if (message.type === "text" && message.text.body === "buttons") {
    const buttons = new ActionButtons(new Button("yes", "Yes"), new Button("no", "No"));
    failed("buttons", await reply(new Interactive(buttons, new Body("Sure?"))));
  } else if (message.type === "text" && message.text.body === "card") {
    const card = [new Name("Ana Lima", "Ana", "Lima"), new Phone("+55 11 98765-4321", "CELL")];
    failed("card", await reply(new Contacts(card)));
  } else if (message.type === "text" && message.text.body === "offer") {
    const offer = new Template("order_ready", new Language("en_US"),
      new HeaderComponent(new HeaderParameter("#7")),
      new BodyComponent(new BodyParameter("Ana"), new BodyParameter(new Currency(25000, "USD", "$25.00"))),
      new URLComponent("7"),
      new PayloadComponent("stop"),
      new CopyComponent("25OFF"));
    failed("template", await reply(offer));
  } else if (message.type === "text") {
    failed("echo", await reply(new Text(`You said: ${message.text.body}`), true));
  } else if (message.type === "interactive") {
    failed("tap", await reply(new Text(`Tapped: ${message.interactive.button_reply.id}`)));
  } else if (message.type === "image") {
    await echoPhoto(message.image, reply);
  }
};

Whatsapp.on.status = ({ status, id, error }) => {
  if (error) console.error(`status ${status} of ${id}: ${JSON.stringify(error)}`);
};

createServer(async (request, response) => {
  const path = new URL(request.url, "http://bot").pathname;
  if (path === "/webhook" && request.method === "POST") {
    response.statusCode = await Whatsapp.handle_post(request);
    response.end();
  } else if (path === "/webhook" && request.method === "GET") {
    try {
      response.end(Whatsapp.handle_get(request));
    } catch (error) {
      response.statusCode = error.httpStatus ?? 500;
      response.end();
    }
  } else {
    response.statusCode = 404;
    response.end();
  }
}).listen(Number(env.PORT ?? 8004), "127.0.0.1");
