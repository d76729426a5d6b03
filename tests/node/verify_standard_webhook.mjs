// A receiver of reposync's webhooks that verifies them with the Standard Webhooks
// library from npm (standardwebhooks), as docs/webhooks.md tells a JavaScript receiver to.
//
// stdin: {"secret": "<the subscription's secret>",
//         "deliveries": [{"headers": {...}, "body_base64": "<the raw body>"}, ...]}
// stdout: {"library": "<version>", "verdicts": [{"ok": true, "payload": {...}} or
//          {"ok": false, "error": "<the library's message>"}, ...]}
//
// A secret in the whsec_ form is the library's own; any other secret is its UTF-8 bytes,
// handed over as "whsec_" + base64 (the recipe in docs/webhooks.md).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Webhook } from "standardwebhooks";

const library = createRequire(import.meta.url)("standardwebhooks/package.json").version;
const input = JSON.parse(readFileSync(0, "utf8"));

const secret = input.secret.startsWith("whsec_")
  ? input.secret
  : `whsec_${Buffer.from(input.secret, "utf8").toString("base64")}`;
const webhook = new Webhook(secret);

const verdicts = input.deliveries.map(({ headers, body_base64: body }) => {
  try {
    // The raw bytes as received: never the body parsed and serialized again.
    const payload = webhook.verify(Buffer.from(body, "base64"), headers);
    return { ok: true, payload };
  } catch (error) {
    return { ok: false, error: `${error.name}: ${error.message}` };
  }
});

process.stdout.write(JSON.stringify({ library, verdicts }));
