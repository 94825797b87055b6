import type { components, paths } from "./generated/relayer.js";
import { unwrap } from "./errors.js";
import { client, type ClientOptions } from "./http.js";

type S = components["schemas"];

/** What a host does over the relayer's API, with its API key (`bhk_…`). */
export class HostClient {
  readonly #http;

  constructor(options: ClientOptions & { apiKey: string }) {
    this.#http = client<paths>(options, options.apiKey);
  }

  /** The key's host and scopes. */
  whoami(): Promise<S["HostView"]> {
    return unwrap(this.#http.GET("/v1/host"));
  }

  /** Prepares a session: a custodial key, and the typed data the owner signs (see `signPrepared`). */
  prepareSession(terms: S["PrepareRequest"]): Promise<S["Prepared"]> {
    return unwrap(this.#http.POST("/v1/sessions/prepare", { body: terms }));
  }

  /** Opens a prepared session through the gateway with the owner's signatures; the answer carries the sandbox's capability token, once. */
  openSession(signed: S["OpenRequest"]): Promise<S["Opened"]> {
    return unwrap(this.#http.POST("/v1/sessions", { body: signed }));
  }

  /** Registers a prepared session the owner opened with their own wallet. */
  registerSession(preparedId: string): Promise<S["Opened"]> {
    return unwrap(this.#http.POST("/v1/sessions/register", { body: { preparedId } }));
  }

  /** Prepares an ERC-8004 agent for an owner: its registration file and the `RegisterAgent` typed data the owner signs. */
  prepareAgent(agent: S["PrepareAgentRequest"]): Promise<S["Agent"]> {
    return unwrap(this.#http.POST("/v1/agents/prepare", { body: agent }));
  }

  /** Registers a prepared agent with the owner's signature; the relayer pays the gas and hands the agent to the owner. */
  registerAgent(agentRef: string, ownerSignature: string): Promise<S["Agent"]> {
    return unwrap(this.#http.POST("/v1/agents", { body: { agentRef, ownerSignature } }));
  }

  /** An agent the host prepared: `registered` once the owner holds it, with its `agentId`. */
  getAgent(agentRef: string): Promise<S["Agent"]> {
    return unwrap(this.#http.GET("/v1/agents/{agentRef}", { params: { path: { agentRef } } }));
  }

  /** The host's sessions, newest first. */
  async listSessions(query: paths["/v1/sessions"]["get"]["parameters"]["query"] = {}): Promise<S["Session"][]> {
    return (await unwrap(this.#http.GET("/v1/sessions", { params: { query } }))).sessions;
  }

  /** A session with its on-chain state, lifecycle and metering. */
  getSession(id: string): Promise<S["Session"]> {
    return unwrap(this.#http.GET("/v1/sessions/{id}", { params: { path: { id } } }));
  }

  /** Revokes a session: its capability token at once, on chain when the relayer is guardian. */
  revokeSession(id: string): Promise<S["Revoked"]> {
    return unwrap(this.#http.POST("/v1/sessions/{id}/revoke", { params: { path: { id } } }));
  }

  /** Closes a session on chain, refunding the owner. */
  closeSession(id: string): Promise<S["Closing"]> {
    return unwrap(this.#http.POST("/v1/sessions/{id}/close", { params: { path: { id } } }));
  }

  /** Reports the sandbox's state (providers without a lifecycle bridge). */
  reportLifecycle(id: string, report: S["LifecycleRequest"]): Promise<S["LifecycleReceived"]> {
    return unwrap(this.#http.POST("/v1/sessions/{id}/lifecycle", { params: { path: { id } }, body: report }));
  }

  /** The host's lifecycle policy and metering rates. */
  getPolicy(): Promise<S["Policy"]> {
    return unwrap(this.#http.GET("/v1/host/policy"));
  }

  /** Sets the host's policy, for events received from now on. */
  setPolicy(policy: S["Policy"]): Promise<S["Policy"]> {
    return unwrap(this.#http.PUT("/v1/host/policy", { body: policy }));
  }

  /** A payment of one of the host's sessions. */
  getPayment(id: string, wait?: number): Promise<S["Payment"]> {
    return unwrap(this.#http.GET("/v1/payments/{id}", { params: { path: { id }, query: { wait } } }));
  }

  /** The typed data the owner signs to decide a pending payment. */
  decisionToSign(id: string, pendingId: string, approve: boolean): Promise<S["DecisionToSign"]> {
    return unwrap(
      this.#http.GET("/v1/sessions/{id}/pending/{pending_id}/decision", {
        params: { path: { id, pending_id: pendingId }, query: { approve } },
      }),
    );
  }

  /** Sends the owner's signed decision through the gateway. */
  decide(id: string, pendingId: string, decision: S["DecisionRequest"]): Promise<S["Decided"]> {
    return unwrap(
      this.#http.POST("/v1/sessions/{id}/pending/{pending_id}/decision", {
        params: { path: { id, pending_id: pendingId } },
        body: decision,
      }),
    );
  }

  /** Adds a webhook endpoint; its `secret` (`whsec_…`) is in this answer only. */
  createWebhook(endpoint: S["WebhookRequest"]): Promise<S["Webhook"]> {
    return unwrap(this.#http.POST("/v1/webhooks", { body: endpoint }));
  }

  /** The host's webhook endpoints. */
  async listWebhooks(): Promise<S["Webhook"][]> {
    return (await unwrap(this.#http.GET("/v1/webhooks"))).webhooks;
  }

  /** Deletes an endpoint. */
  async deleteWebhook(id: string): Promise<void> {
    await unwrap(this.#http.DELETE("/v1/webhooks/{id}", { params: { path: { id } } }));
  }

  /** An endpoint's deliveries, newest first. */
  async deliveries(id: string, status?: "pending" | "delivered" | "dead"): Promise<S["Delivery"][]> {
    const query = status ? { status } : {};
    return (await unwrap(this.#http.GET("/v1/webhooks/{id}/deliveries", { params: { path: { id }, query } })))
      .deliveries;
  }

  /** Delivers a message again (a dead one, say). */
  async replay(id: string, messageId: string): Promise<void> {
    await unwrap(
      this.#http.POST("/v1/webhooks/{id}/deliveries/{message_id}/replay", {
        params: { path: { id, message_id: messageId } },
      }),
    );
  }
}
