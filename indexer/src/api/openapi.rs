//! The OpenAPI 3.1 document at `/openapi.json`, derived from the handlers' `#[utoipa::path]`
//! attributes and the types they answer ([`super::dto`]). [`super::router`] registers each
//! route with its operation; [`finish`] adds the error answers every operation shares.

use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{Content, OpenApi as Document, Ref, RefOr};
use utoipa::{OpenApi, ToSchema};

/// Every error's body.
#[derive(ToSchema)]
#[schema(as = Error)]
#[allow(dead_code)] // A schema: `ApiError` writes the body.
pub(super) struct ErrorBody {
    /// Stable: `invalid_parameter` (details: `parameter`), `not_found`, `unavailable`.
    code: String,
    /// What went wrong, in words.
    message: String,
    /// Its arguments.
    #[schema(value_type = Object)]
    details: serde_json::Value,
}

/// The document's fixed part: what the routes' operations are added to.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Bursar indexer",
        description = "Every event of the Bursar contracts, reorg-safe, for audits. Amounts and \
            ids are decimal strings in base units, session ids `0x` and 64 lowercase hex digits \
            (as the relayer writes them; either that or decimal is accepted), addresses EIP-55; \
            every event carries its chain fields (block number, hash and time, transaction \
            hash, log index), its `finality` (`latest`, `safe` or `finalized`, by the node's \
            block tags) and `canonical`; answers are as of the last block indexed unless \
            `asOfBlock` or `asOfTime` says otherwise; parameter names may also be written \
            snake_case (`as_of_block`); errors are `{code, message, details}`. No operation \
            needs credentials."
    ),
    tags(
        (name = "sessions", description = "Sessions: their terms, state, timeline and audit export."),
        (name = "events", description = "Every log of the contracts, decoded."),
        (name = "spend", description = "What was paid, summed."),
        (name = "records", description = "Receipts and provenance records."),
        (name = "agents", description = "ERC-8004 agents' passports: identity and payment-backed reputation."),
        (name = "service", description = "Health, metrics, this document."),
    ),
    components(schemas(ErrorBody))
)]
pub(super) struct Doc;

/// The errors operations answer: status, shared response's name, meaning.
const ERRORS: &[(&str, &str, &str)] = &[
    (
        "400",
        "InvalidParameter",
        "A bad query parameter (`invalid_parameter`, named in `details.parameter`).",
    ),
    ("404", "NotFound", "Nothing with this id (`not_found`)."),
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
        let Some(get) = item.get.as_mut() else {
            continue;
        };
        if get
            .operation_id
            .as_deref()
            .is_some_and(|id| ["metrics", "openapi"].contains(&id))
        {
            continue;
        }
        for &(status, name, _) in ERRORS {
            get.responses
                .responses
                .entry(status.to_owned())
                .or_insert_with(|| RefOr::Ref(Ref::new(format!("#/components/responses/{name}"))));
        }
    }
    doc
}
