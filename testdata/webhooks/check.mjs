// Runs the Standard Webhooks reference library on what
// events_webhook_standard_test.go hands it on stdin:
//   {"verify": [{"secret": "whsec_…", "headers": {…}, "body": "…"}],
//    "sign": [{"secret": "whsec_…", "id": "…", "timestamp": 1700000000, "body": "…"}]}
// and prints, as JSON, whether each delivery verifies (or the library's
// reason) and the webhook-signature the library makes for each body to sign.
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { verify, sign } = JSON.parse(input);
const verified = verify.map(({ secret, headers, body }) => {
  try {
    new Webhook(secret).verify(body, headers);
    return "ok";
  } catch (e) {
    return String(e.message || e);
  }
});
const signatures = sign.map(({ secret, id, timestamp, body }) => new Webhook(secret).sign(id, new Date(timestamp * 1000), body));
process.stdout.write(JSON.stringify({ verified, signatures }));
