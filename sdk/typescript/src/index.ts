/**
 * Bursar for hosts and sandboxes. A host prepares sessions, has the owner sign them in their
 * own wallet, opens, watches, revokes and closes them ({@link HostClient}); a sandbox pays,
 * reads its limits, heart-beats, records provenance and pays x402 APIs with its capability
 * token ({@link SandboxClient}); an auditor reads the indexer ({@link IndexerClient}). Types
 * are generated from the services' OpenAPI documents (`npm run generate`).
 */
export { BursarError } from "./errors.js";
export type { ClientOptions } from "./http.js";
export { HostClient } from "./host.js";
export { SandboxClient, type PayRequest, type FetchOptions } from "./sandbox.js";
export { IndexerClient } from "./indexer.js";
export { signPrepared, signDecision, toViem, type TypedDataSigner } from "./signing.js";
export { verifyWebhook, type WebhookEvent } from "./webhooks.js";
export { parseAmount, formatAmount, type Token } from "./money.js";
export type { components as RelayerSchemas, paths as RelayerPaths } from "./generated/relayer.js";
export type { components as IndexerSchemas, paths as IndexerPaths } from "./generated/indexer.js";
