//! The OpenAPI 3.1 document at `/openapi.json`, derived from the handlers' `#[utoipa::path]`
//! attributes and the types they take and answer. [`super::router`] registers each route with
//! its operation, so a route cannot be documented without existing (or exist undocumented);
//! [`finish`] then adds what every operation here shares: its error answers and, on POSTs, the
//! `Idempotency-Key` header.

use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBody;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, OpenApi as Document, Ref, RefOr, Required};
use utoipa::{Modify, OpenApi, ToSchema};

use super::error::ErrorBody;
use crate::providers::Provider;

/// The document's fixed part: what the routes' operations are added to.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Bursar relayer",
        description = "Bounded, audited money for sandboxed agents. Hosts authenticate with API \
            keys (`bhk_…`), sandboxes with their session's capability token (`bct_…`), both as \
            `Authorization: Bearer`; operations without `security` need no credentials. Owners \
            sign EIP-712 typed data in their own wallets. Amounts are decimal strings in base \
            units; errors are `{code, message, details}` with a stable `code`."
    ),
    tags(
        (name = "sessions", description = "Hosts open, watch, revoke and close sessions; sandboxes heart-beat."),
        (name = "allowlists", description = "Hosts' counterparty allowlists, made and edited through the relayer."),
        (name = "payments", description = "Sandboxes pay from their session."),
        (name = "provenance", description = "Sandboxes record what they produced and from what."),
        (name = "agents", description = "Hosts register ERC-8004 agents for owners, gasless: the relayer serves their registration files."),
        (name = "reputation", description = "Sandboxes rate the agents they paid, for the payment's receipt (ERC-8004 feedback backed by payment)."),
        (name = "x402", description = "Agents pay HTTP 402 APIs; the relayer is an x402 facilitator."),
        (name = "lifecycle", description = "Sandboxes' lifecycles, from providers' webhooks or hosts' reports."),
        (name = "webhooks", description = "Hosts' outbound webhooks (Standard Webhooks)."),
        (name = "service", description = "Health, metrics, this document."),
    ),
    components(schemas(ErrorBody, Provider)),
    modifiers(&Security)
)]
pub(super) struct Doc;

/// The credentials operations name in their `security`.
struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        for (name, description) in [
            ("hostKey", "A host API key (`bhk_…`)."),
            ("capabilityToken", "A session's capability token (`bct_…`)."),
        ] {
            let scheme = HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(description))
                .build();
            components.add_security_scheme(name, SecurityScheme::Http(scheme));
        }
    }
}

/// The errors operations may answer (each operation may say more of its own): status, the
/// name of the shared response, what it means.
const ERRORS: &[(&str, &str, &str)] = &[
    (
        "400",
        "InvalidRequest",
        "Malformed request (`invalid_request`, naming the field or parameter).",
    ),
    (
        "401",
        "Unauthorized",
        "Missing, unknown, revoked or expired credentials (`unauthorized`).",
    ),
    (
        "403",
        "Forbidden",
        "The key lacks the operation's scope (`forbidden`).",
    ),
    (
        "404",
        "NotFound",
        "Nothing with this id that the caller may see (`not_found`).",
    ),
    (
        "409",
        "Conflict",
        "Conflicts with the state of what it names (see `code`).",
    ),
    (
        "413",
        "TooLarge",
        "The body is over the limit (`body_too_large`).",
    ),
    (
        "422",
        "Refused",
        "Refused by the contracts: `code` is the contract error's name, `details` its arguments.",
    ),
    (
        "429",
        "RateLimited",
        "Rate limited (`rate_limited`; `Retry-After`).",
    ),
    (
        "503",
        "Unavailable",
        "The database or the node is unavailable (`unavailable`); retry.",
    ),
];

/// The document with the routes' operations in it, completed.
pub(super) fn finish(mut doc: Document) -> Document {
    let components = doc.components.get_or_insert_with(Default::default);
    let error = RefOr::Ref(Ref::from_schema_name(ErrorBody::name()));
    for &(_, name, description) in ERRORS {
        let response: Response = ResponseBuilder::new()
            .description(description)
            .content("application/json", Content::new(Some(error.clone())))
            .build();
        components
            .responses
            .insert(name.to_owned(), RefOr::T(response));
    }
    for item in doc.paths.paths.values_mut() {
        let methods = [
            (&mut item.get, false),
            (&mut item.put, true),
            (&mut item.post, true),
            (&mut item.delete, false),
        ];
        for (operation, has_body) in methods {
            if let Some(operation) = operation.as_mut() {
                add_errors(operation, has_body);
            }
        }
        if let Some(post) = item.post.as_mut() {
            add_idempotency_key(post);
        }
    }
    doc
}

fn add_errors(operation: &mut Operation, has_body: bool) {
    let open = operation.security.is_none();
    for &(status, name, _) in ERRORS {
        let skip = match status {
            "401" | "403" => open,
            "413" => !has_body,
            _ => false,
        };
        if !skip {
            operation
                .responses
                .responses
                .entry(status.to_owned())
                .or_insert_with(|| RefOr::Ref(Ref::new(format!("#/components/responses/{name}"))));
        }
    }
    // A body is required wherever one is taken.
    if let Some(RefOr::T(RequestBody { required, .. })) = operation.request_body.as_mut() {
        required.get_or_insert(Required::True);
    }
}

fn add_idempotency_key(operation: &mut Operation) {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(255));
    let parameter = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .schema(Some(schema))
        .description(Some(
            "The same key and body get the first answer again (`Idempotent-Replayed: true`); \
             another body under the key gets 409 `idempotency_key_reused`.",
        ))
        .build();
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(RefOr::T(parameter));
}
