import type { components, paths } from "./generated/indexer.js";
import { unwrap } from "./errors.js";
import { client, type ClientOptions } from "./http.js";

type S = components["schemas"];

/** What an auditor reads from the indexer (no credentials). */
export class IndexerClient {
  readonly #http;

  constructor(options: ClientOptions) {
    this.#http = client<paths>(options);
  }

  /** A session's terms and state by the wallet's rules, as of a block or time. */
  session(id: string, asOf: { asOfBlock?: number; asOfTime?: number } = {}): Promise<S["SessionState"]> {
    return unwrap(this.#http.GET("/v1/sessions/{id}", { params: { path: { id }, query: asOf } }));
  }

  /** A page of the session's events in chain order. */
  timeline(id: string, query: paths["/v1/sessions/{id}/timeline"]["get"]["parameters"]["query"] = {}): Promise<S["EventPage"]> {
    return unwrap(this.#http.GET("/v1/sessions/{id}/timeline", { params: { path: { id }, query } }));
  }

  /** Executed payments summed. */
  spend(query: paths["/v1/spend"]["get"]["parameters"]["query"] = {}): Promise<S["Spend"]> {
    return unwrap(this.#http.GET("/v1/spend", { params: { query } }));
  }

  /** A record's lineage. */
  lineage(id: string, depth?: number): Promise<S["Lineage"]> {
    return unwrap(this.#http.GET("/v1/provenance/{id}/lineage", { params: { path: { id }, query: { depth } } }));
  }

  /**
   * An ERC-8004 agent's passport: owner, wallet, registration file, and its reputation counted
   * only over feedback a payment backs.
   */
  agent(agentId: string, asOf: { asOfBlock?: number; asOfTime?: number } = {}): Promise<S["Passport"]> {
    return unwrap(this.#http.GET("/v1/agents/{agentId}", { params: { path: { agentId }, query: asOf } }));
  }
}
