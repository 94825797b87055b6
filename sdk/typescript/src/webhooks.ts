import { Webhook } from "standardwebhooks";

/** An event the relayer sends a host's endpoint. */
export interface WebhookEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * Verifies a delivery of the relayer's (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, HMAC-SHA256 with the endpoint's `whsec_…` secret) on its raw body, and
 * answers its event; throws when the signature or the timestamp does not hold.
 */
export function verifyWebhook(
  secret: string,
  rawBody: string,
  headers: Record<string, string> | Headers,
): WebhookEvent {
  const plain = headers instanceof Headers ? Object.fromEntries(headers.entries()) : headers;
  return new Webhook(secret).verify(rawBody, plain) as WebhookEvent;
}
