// Verifies webhook deliveries with the Standard Webhooks project's own JavaScript library
// (npm `standardwebhooks`), as a host's Node receiver would. Reads a JSON array of
// {secret, id, timestamp, signature, body} on stdin; prints a JSON array of true/false.
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const verdicts = JSON.parse(input).map(({ secret, id, timestamp, signature, body }) => {
  try {
    new Webhook(secret).verify(body, {
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": signature,
    });
    return true;
  } catch {
    return false;
  }
});
console.log(JSON.stringify(verdicts));
